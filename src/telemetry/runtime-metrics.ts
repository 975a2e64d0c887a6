// Process and runtime metrics from maintained collectors rather than our own: the process' CPU
// and memory (@opentelemetry/host-metrics), Node's event loop, heap and GC
// (@opentelemetry/instrumentation-runtime-node), and hugot_build_info, the gauge that says which
// version of what a series came from.
import type { Meter, MeterProvider } from '@opentelemetry/api';
import { HostMetrics } from '@opentelemetry/host-metrics';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';

export interface RuntimeMetrics {
  stop(): void;
}

export function startRuntimeMetrics(
  meterProvider: MeterProvider,
  meter: Meter,
  serviceVersion: string,
): RuntimeMetrics {
  // Only the process' own groups: the host's disks and network are a node exporter's job.
  new HostMetrics({
    meterProvider,
    name: 'hugot-stream',
    metricGroups: ['process.cpu', 'process.memory'],
  }).start();
  const runtime = new RuntimeNodeInstrumentation();
  runtime.setMeterProvider(meterProvider);
  runtime.enable();
  const build = meter.createObservableGauge('hugot.build.info', {
    description: 'Always 1: the versions of hugot-stream and Node behind the series',
  });
  const attributes = {
    version: serviceVersion,
    node: process.versions.node,
  };
  build.addCallback((result) => result.observe(1, attributes));
  return { stop: () => runtime.disable() };
}
