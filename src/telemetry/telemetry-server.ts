// One small HTTP server on telemetry.port: /metrics (Prometheus text, from the exporter's own
// request handler), /livez and /readyz (200 or 503 with the reasons as JSON). A Kubernetes probe
// and a Prometheus scrape hit the same port; nothing else is served.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthAnswer, HealthState } from './health.ts';

export interface TelemetryServerOptions {
  host: string;
  port: number;
  health: HealthState;
  /** Absent when telemetry.metrics is false. */
  metrics?: (request: IncomingMessage, response: ServerResponse) => void;
}

export class TelemetryServer {
  private readonly server: Server;

  private constructor(server: Server) {
    this.server = server;
  }

  static async start(options: TelemetryServerOptions): Promise<TelemetryServer> {
    const server = createServer((request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405, { allow: 'GET, HEAD' }).end();
      } else if (path === '/livez') answer(response, options.health.liveness());
      else if (path === '/readyz') answer(response, options.health.readiness());
      else if (path === '/metrics' && options.metrics !== undefined)
        options.metrics(request, response);
      else response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    });
    // Probes must not keep a draining process alive.
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.unref();
    return new TelemetryServer(server);
  }

  /** The bound port (telemetry.port 0 picks a free one: tests). */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function answer(response: ServerResponse, health: HealthAnswer): void {
  response
    .writeHead(health.ok ? 200 : 503, { 'content-type': 'application/json' })
    .end(`${JSON.stringify({ status: health.ok ? 'ok' : 'failing', reasons: health.reasons })}\n`);
}
