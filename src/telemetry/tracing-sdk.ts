// Tracing through @opentelemetry/sdk-node: spans exported over OTLP/HTTP to telemetry.tracing
// .endpoint, W3C trace context as the propagator, sampling that follows a sampled parent and
// keeps `sampleRatio` of the traces that start here. No auto-instrumentation: the worker makes
// its own spans (record-tracing.ts), so nothing is patched.
import { trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';
import { RecordTracing } from './record-tracing.ts';
import type { Resource } from '@opentelemetry/resources';
import type { TelemetryConfig } from '../config/telemetry-options.ts';

export interface TracingHandle {
  tracing: RecordTracing;
  /** Flushes the spans still buffered, then stops exporting. */
  shutdown(): Promise<void>;
}

export function startTracing(
  config: TelemetryConfig['tracing'] & { endpoint: string },
  resource: Resource,
): TracingHandle {
  const propagator = new W3CTraceContextPropagator();
  const sdk = new NodeSDK({
    resource,
    autoDetectResources: false,
    instrumentations: [],
    textMapPropagator: propagator,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.endpoint }) }),
    ],
  });
  sdk.start();
  const tracing = new RecordTracing({ tracer: trace.getTracer('hugot-stream'), propagator });
  return { tracing, shutdown: () => sdk.shutdown() };
}
