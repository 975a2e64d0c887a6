// Tokenizing only what truncation keeps. Tokenizers split words at whitespace before anything
// else, so a text cut at a space has exactly the whole text's first tokens: when the cut prefix
// alone reaches the cap, so does the text, and the rest need never be tokenized. The main
// thread's pricing and the inference thread's truncating encode both use it.

/** Characters per token a prefix is given: well above English's ~4.5, so it rarely falls short. */
export const PREFIX_CHARACTERS_PER_TOKEN = 8;

/** The text cut at a space at most `characters` in, or undefined when the text is no longer. */
export function wordPrefix(text: string, characters: number): string | undefined {
  if (!Number.isFinite(characters) || text.length <= characters) return undefined;
  const cut = text.lastIndexOf(' ', characters);
  return cut > 0 ? text.slice(0, cut) : undefined;
}
