// BERT's normalizer strips accents by decomposing every text to Unicode NFD and dropping the
// combining marks; in the Rust tokenizer that is a third of an English e-mail's encode (0.43 →
// 0.29 core-ms for a 1,280-character prefix, docs/performance.md). On a text that is all ASCII
// the decomposition changes nothing, no character is a mark, and lowercasing, control-character
// cleaning and CJK spacing treat it the same either way: a twin tokenizer whose normalizer does not
// strip accents gives it the very same encoding, ids, offsets and words alike. Texts with any other
// character keep the tokenizer.json as it is.

interface BertNormalizerJson {
  type: 'BertNormalizer';
  strip_accents?: boolean | null;
  lowercase?: boolean;
  [key: string]: unknown;
}

/**
 * tokenizer.json for the twin that encodes ASCII texts, or undefined where the twin would do the
 * same work as the original (a normalizer other than a BERT one that strips accents).
 */
export function asciiTwinJson(json: string): string | undefined {
  const parsed = JSON.parse(json) as { normalizer?: unknown };
  const normalizer = parsed.normalizer as Partial<BertNormalizerJson> | null | undefined;
  if (normalizer?.type !== 'BertNormalizer') return undefined;
  // strip_accents null follows lowercase, as in Python's BertNormalizer.
  const strips = normalizer.strip_accents ?? normalizer.lowercase ?? true;
  if (!strips) return undefined;
  return JSON.stringify({ ...parsed, normalizer: { ...normalizer, strip_accents: false } });
}

// eslint-disable-next-line no-control-regex -- every code point below 0x80 is the point here
const ASCII_ONLY = /^[\u0000-\u007f]*$/;

export function isAscii(text: string): boolean {
  return ASCII_ONLY.test(text);
}
