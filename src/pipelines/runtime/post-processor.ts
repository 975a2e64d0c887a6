// What tokenizer.json's post-processor does to a single text's type ids, read once at load so
// that the inference thread need not fetch a row of zeros from Rust for every record.

interface TemplatePiece {
  SpecialToken?: { type_id?: unknown };
  Sequence?: { type_id?: unknown };
}

/**
 * True when every single-text encoding the post-processor gives has type ids 0: no
 * post-processor, BERT's and RoBERTa's (they mark only a pair's second text), ByteLevel's (offsets
 * only), a template whose single pieces all say 0, or a sequence of these. Anything else, or
 * anything unrecognised, is false, and the ids are read from the encoding.
 */
export function singleTypeIdsAreZero(processor: unknown): boolean {
  if (processor === null || processor === undefined) return true;
  if (typeof processor !== 'object') return false;
  const { type } = processor as { type?: unknown };
  switch (type) {
    case 'BertProcessing':
    case 'RobertaProcessing':
    case 'ByteLevel':
      return true;
    case 'TemplateProcessing': {
      const single = (processor as { single?: unknown }).single;
      return (
        Array.isArray(single) &&
        single.every((piece: TemplatePiece) => {
          const typeId = (piece.SpecialToken ?? piece.Sequence)?.type_id;
          return typeId === 0;
        })
      );
    }
    case 'Sequence': {
      const processors = (processor as { processors?: unknown }).processors;
      return Array.isArray(processors) && processors.every((p) => singleTypeIdsAreZero(p));
    }
    default:
      return false;
  }
}
