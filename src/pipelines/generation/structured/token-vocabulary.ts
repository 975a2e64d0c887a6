// What text every token adds when a generated sequence is decoded, as bytes: a byte-level BPE
// token (GPT-2, SmolLM2) spells raw bytes through its printable alphabet, and may end inside a
// UTF-8 character; a sentencepiece-style one (Llama) writes '▁' for a space and <0xNN> for a raw
// byte. Read from tokenizer.json's model and decoder, the way the tokenizer's own decode reads
// them; special tokens add nothing (they are skipped when the output is decoded).
import { ConfigError } from '../../../errors.ts';

export interface TokenVocabulary {
  /** Bytes each token id adds; undefined for special tokens and ids with no text. */
  readonly bytes: readonly (Uint8Array | undefined)[];
  /** Spaces the decoder strips from the start of the whole text (a Strip decoder). */
  readonly leadingStrip: number;
}

interface DecoderSpec {
  type?: string;
  decoders?: DecoderSpec[];
  pattern?: { String?: string };
  content?: string;
  start?: number;
  replacement?: string;
  prepend_scheme?: string;
  add_prefix_space?: boolean;
}

interface TokenizerFile {
  model?: { type?: string; vocab?: Record<string, number> | [string, number][] };
  added_tokens?: { id: number; content: string; special: boolean }[];
  decoder?: DecoderSpec | null;
}

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;

export function tokenVocabulary(tokenizerJson: string, folder: string): TokenVocabulary {
  const file = JSON.parse(tokenizerJson) as TokenizerFile;
  const decoders = flatten(file.decoder ?? undefined);
  const unsupported = decoders.find(
    (d) =>
      !['ByteLevel', 'Replace', 'ByteFallback', 'Fuse', 'Strip', 'Metaspace'].includes(
        d.type ?? '',
      ),
  );
  if (decoders.length === 0 || unsupported !== undefined)
    throw new ConfigError(
      `responseFormat needs a byte-level or sentencepiece-style tokenizer; ${folder}/tokenizer.json ` +
        `has decoder ${JSON.stringify(unsupported?.type ?? null)}`,
      { field: 'responseFormat' },
    );
  const byteLevel = decoders.some((d) => d.type === 'ByteLevel');
  const byteFallback = decoders.some((d) => d.type === 'ByteFallback');
  const replaces: [string, string][] = [];
  let leadingStrip = 0;
  for (const d of decoders) {
    if (d.type === 'Replace' && d.pattern?.String !== undefined)
      replaces.push([d.pattern.String, d.content ?? '']);
    if (d.type === 'Strip' && d.content === ' ') leadingStrip = d.start ?? 0;
    if (d.type === 'Metaspace') {
      replaces.push([d.replacement ?? '▁', ' ']);
      if (d.prepend_scheme !== 'never' && d.add_prefix_space !== false) leadingStrip = 1;
    }
  }
  const tokens = new Map<number, string>();
  const vocab = file.model?.vocab ?? {};
  if (Array.isArray(vocab)) vocab.forEach(([token], id) => tokens.set(id, token));
  else for (const [token, id] of Object.entries(vocab)) tokens.set(id, token);
  const special = new Set<number>();
  const added = new Map<number, string>();
  for (const t of file.added_tokens ?? []) {
    if (t.special) special.add(t.id);
    else added.set(t.id, t.content);
  }
  let size = 0;
  for (const ids of [tokens.keys(), special, added.keys()])
    for (const id of ids) size = Math.max(size, id + 1);
  const encoder = new TextEncoder();
  const inverse = byteLevel ? byteLevelInverse() : undefined;
  const bytes: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(size);
  for (let id = 0; id < size; id += 1) {
    if (special.has(id)) continue;
    const addedText = added.get(id);
    if (addedText !== undefined) {
      bytes[id] = encoder.encode(addedText);
      continue;
    }
    const token = tokens.get(id);
    if (token === undefined) continue;
    let out: Uint8Array | undefined;
    if (inverse !== undefined) out = fromByteLevel(token, inverse);
    else {
      const byte = byteFallback ? BYTE_TOKEN.exec(token) : null;
      if (byte !== null) out = Uint8Array.of(parseInt(byte[1] as string, 16));
      else {
        let text = token;
        for (const [from, to] of replaces) text = text.replaceAll(from, to);
        out = encoder.encode(text);
      }
    }
    if (out !== undefined && out.length > 0) bytes[id] = out;
  }
  return { bytes, leadingStrip };
}

function flatten(decoder: DecoderSpec | undefined): DecoderSpec[] {
  if (decoder === undefined) return [];
  if (decoder.type === 'Sequence') return (decoder.decoders ?? []).flatMap((d) => flatten(d));
  return [decoder];
}

/** GPT-2's bytes_to_unicode, inverted: printable stand-in character -> the byte it spells. */
function byteLevelInverse(): Map<number, number> {
  const bytes: number[] = [];
  for (let b = 0x21; b <= 0x7e; b += 1) bytes.push(b);
  for (let b = 0xa1; b <= 0xac; b += 1) bytes.push(b);
  for (let b = 0xae; b <= 0xff; b += 1) bytes.push(b);
  const chars = [...bytes];
  let n = 0;
  for (let b = 0; b < 256; b += 1) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + n);
      n += 1;
    }
  }
  return new Map(chars.map((c, i) => [c, bytes[i] as number]));
}

function fromByteLevel(token: string, inverse: Map<number, number>): Uint8Array | undefined {
  const out: number[] = [];
  for (const char of token) {
    const byte = inverse.get(char.codePointAt(0) as number);
    if (byte === undefined) return undefined;
    out.push(byte);
  }
  return Uint8Array.from(out);
}
