// Compiled into the local Apicurio Registry build by scripts/services/registry-local.ts.
//
// Apicurio's "config-index" Quarkus extension has a build-time half that lists the properties an
// administrator may change while the registry runs; Maven Central does not serve that half, so
// the build leaves the extension out and this bean stands in for its output: no property is
// changeable at run time. Schemas, subjects, compatibility rules and the Confluent-compatible API
// do not depend on that list (the ccompat /config endpoints store rules, not dynamic properties).
package local.hugotstream.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

public class DynamicConfigProperties {
  @Produces
  @Singleton
  DynamicConfigPropertyList noDynamicProperties() {
    return new DynamicConfigPropertyList(List.of());
  }
}
