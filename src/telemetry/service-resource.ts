// The OpenTelemetry resource every metric and span carries: without one, Prometheus' target_info
// says service_name="unknown_service:node" and two workers' series cannot be told apart.
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TelemetryConfig } from '../config/telemetry-options.ts';
import { workerId } from '../route/dead-letter.ts';

/** service.instance.id: the host and the process, as a dead letter's worker.id names them. */
const SERVICE_INSTANCE_ID = 'service.instance.id';

export function serviceResource(
  config: Pick<TelemetryConfig, 'serviceName' | 'serviceVersion'>,
  serviceName = config.serviceName,
): Resource {
  return resourceFromAttributes({
    [ATTR_SERVICE_NAME]: serviceName,
    [ATTR_SERVICE_VERSION]: config.serviceVersion,
    [SERVICE_INSTANCE_ID]: workerId,
  });
}
