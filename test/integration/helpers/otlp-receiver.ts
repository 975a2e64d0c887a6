// An OTLP/HTTP trace receiver for tests: POST /v1/traces with the JSON encoding, which is what
// @opentelemetry/exporter-trace-otlp-http sends (application/json; the protobuf encoding is the
// -proto exporter's). Spans are kept flat, with hex ids, as a test wants to look them up.
import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The URL to give the exporter (…/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Requests that could not be read (a test asserts there were none). */
  errors: string[];
  close: () => Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: OtlpAnyValue }[];
}

interface OtlpTraceRequest {
  resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/** Ids are hex in OTLP JSON; some encoders send base64 (the protobuf bytes' JSON mapping). */
function hexId(id: string | undefined, bytes: number): string | undefined {
  if (id === undefined || id === '') return undefined;
  if (/^[0-9a-f]+$/i.test(id) && id.length === bytes * 2) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex');
}

function valueOf(value: OtlpAnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const errors: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        if (req.method !== 'POST' || req.url !== '/v1/traces')
          throw new Error(`unexpected ${req.method} ${req.url}`);
        if (req.headers['content-type']?.startsWith('application/json') !== true)
          throw new Error(`unexpected content type ${req.headers['content-type']}`);
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const request = JSON.parse(body.toString('utf8')) as OtlpTraceRequest;
        for (const resource of request.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? [])
            for (const span of scope.spans ?? []) spans.push(flatten(span));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no receiver port');
  return {
    url: `http://127.0.0.1:${address.port}/v1/traces`,
    spans,
    errors,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function flatten(span: OtlpSpan): ReceivedSpan {
  return {
    traceId: hexId(span.traceId, 16) ?? '',
    spanId: hexId(span.spanId, 8) ?? '',
    parentSpanId: hexId(span.parentSpanId, 8),
    name: span.name,
    kind: span.kind ?? 0,
    links: (span.links ?? []).map((l) => ({
      traceId: hexId(l.traceId, 16) ?? '',
      spanId: hexId(l.spanId, 8) ?? '',
    })),
    attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
  };
}
