// Scrubs secrets out of whatever is about to be logged. Secrets reach logs in a few known shapes:
// credentials inside a connection string (redis://user:pass@host), the arguments of a Redis
// AUTH/HELLO command carried by an ioredis error (`command.args`), fields and headers named like
// secrets (password, token, authorization, x-api-key...), and bearer tokens or `password=` pairs
// inside free text. Every log line goes through redactFields/redactText (src/logger.ts).

export const REDACTED = '[redacted]';

/** Names whose string values are secrets: `password`, `KAFKA_PASSWORD`, `clientSecret`, `x-api-key`. */
const SECRET_NAME =
  /(password|passwd|passphrase|secret|token|api[-_]?key|private[-_]?key|credentials?|authorization|cookie|sasl)$/i;
/** Redis commands whose arguments carry credentials. */
const SECRET_COMMANDS = new Set(['auth', 'hello', 'migrate', 'acl', 'config']);

const CREDENTIALS_IN_URL = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:@/?#]*):([^\s@/?#]+)@/gi;
const SECRET_PAIR =
  /\b(password|passwd|pwd|secret|token|access_token|api[-_]?key|sasl\.password)(=|:\s*)([^\s&;,'"]+)/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;
/** Hugging Face access tokens (HF_TOKEN) wherever they appear: `hf_` and a long random tail. */
const HF_TOKEN = /\bhf_[A-Za-z0-9]{16,}\b/g;

export function redactText(text: string): string {
  return text
    .replace(
      CREDENTIALS_IN_URL,
      (_, scheme: string, user: string) => `${scheme}${user}:${REDACTED}@`,
    )
    .replace(SECRET_PAIR, (_, key: string, sep: string) => `${key}${sep}${REDACTED}`)
    .replace(BEARER, (_, kind: string) => `${kind} ${REDACTED}`)
    .replace(HF_TOKEN, REDACTED);
}

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

const MAX_DEPTH = 10;

/** A redacted copy of a log line's fields; errors become plain objects (type, message, stack...). */
export function redactFields(fields: object): Record<string, unknown> {
  const out = redactValue(fields, 0, new WeakSet());
  return out !== null && typeof out === 'object' && !Array.isArray(out)
    ? (out as Record<string, unknown>)
    : { value: out };
}

export function redactValue(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1, seen));
    if (value instanceof Error) return redactError(value, depth, seen);
    if (value instanceof Map) return redactEntries([...value.entries()], depth, seen);
    // Only plain data is walked: class instances (a client, a socket) are named, not dumped.
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') return redactValue(toJSON.call(value), depth + 1, seen);
      return `[${value.constructor?.name ?? 'object'}]`;
    }
    return redactEntries(Object.entries(value), depth, seen);
  } finally {
    seen.delete(value);
  }
}

function redactEntries(
  entries: [unknown, unknown][],
  depth: number,
  seen: WeakSet<object>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const command = entries.find(([k]) => k === 'name')?.[1];
  const secretArgs = typeof command === 'string' && SECRET_COMMANDS.has(command.toLowerCase());
  for (const [k, v] of entries) {
    const key = String(k);
    if (secretArgs && key === 'args') out[key] = [REDACTED];
    else if (isSecretName(key) && (typeof v === 'string' || Buffer.isBuffer(v)) && v.length > 0)
      out[key] = REDACTED;
    else out[key] = redactValue(v, depth + 1, seen);
  }
  return out;
}

/** pino's error shape (type, message, stack, own properties, cause), scrubbed. */
function redactError(err: Error, depth: number, seen: WeakSet<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    type: err.name,
    message: redactText(err.message),
  };
  if (err.stack !== undefined) out['stack'] = redactText(err.stack);
  const own = Object.entries(err).filter(([k]) => k !== 'message' && k !== 'stack');
  Object.assign(out, redactEntries(own, depth, seen));
  if (err.cause !== undefined) out['cause'] = redactValue(err.cause, depth + 1, seen);
  if (err instanceof AggregateError)
    out['errors'] = err.errors.map((e: unknown) => redactValue(e, depth + 1, seen));
  return out;
}
