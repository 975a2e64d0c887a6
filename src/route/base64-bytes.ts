// A record's image or audio file sent as text: base64 or base64url, as a data: URL too, with any
// line breaks an encoder put in. The callers refuse a text that is not base64 with their own
// dead-letter code and message.

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;
const DATA_URL = /^data:[^,]*;base64,/;

/** The bytes a base64 text encodes; undefined for an empty text or one that is not base64. */
export function base64Bytes(text: string): Uint8Array | undefined {
  const payload = text.replace(DATA_URL, '').replace(/\s+/g, '');
  if (payload === '' || !(BASE64.test(payload) || BASE64URL.test(payload))) return undefined;
  return Buffer.from(payload, BASE64.test(payload) ? 'base64' : 'base64url');
}
