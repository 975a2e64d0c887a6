// Redis stream entries as XREADGROUP and XAUTOCLAIM return them (read as raw bytes), in the
// layout the Redis Streams source and sink share: `value` = the record bytes, `key` = its key,
// every other field a header (`header.value` / `header.key` stand for headers named like those).

export interface StreamEntry {
  id: string;
  /** null when the entry has no `value` field. */
  value: Buffer | null;
  key: Buffer | null;
  headers: Record<string, string>;
}

/** [[stream, [[id, [field, value, ...] | null], ...]], ...] | null -> entries of every stream. */
export function parseEntries(reply: unknown): StreamEntry[] {
  const entries: StreamEntry[] = [];
  if (!Array.isArray(reply)) return entries;
  for (const streamReply of reply as unknown[]) {
    const list = Array.isArray(streamReply) ? (streamReply[1] as unknown) : undefined;
    if (!Array.isArray(list)) continue;
    for (const item of list as unknown[]) {
      if (!Array.isArray(item)) continue;
      const [id, fields] = item as [Buffer | string, (Buffer | string)[] | null];
      // A pending entry that was deleted from the stream comes back without fields.
      entries.push(entryOf(String(id), fields ?? []));
    }
  }
  return entries;
}

function entryOf(id: string, fields: readonly (Buffer | string)[]): StreamEntry {
  const entry: StreamEntry = { id, value: null, key: null, headers: {} };
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = String(fields[i]);
    const raw = fields[i + 1];
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw ?? '', 'utf8');
    if (name === 'value') entry.value = bytes;
    else if (name === 'key') entry.key = bytes;
    else if (name === 'header.value' || name === 'header.key') {
      entry.headers[name.slice('header.'.length)] = bytes.toString('utf8');
    } else entry.headers[name] = bytes.toString('utf8');
  }
  return entry;
}
