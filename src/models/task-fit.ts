// Whether a model folder can serve a task, judged from what the folder declares (config.json,
// the tokenizer and preprocessor files, the graphs' inputs and outputs) before any weight loads.
// Each task declares its needs (TaskDefinition.needs); a model that would run and write nonsense
// (an embedding model's hidden states read as class logits: LABEL_99) is refused at start-up.
import type { OnnxSignature, OnnxValue } from './onnx-signature.ts';

/** An output the task reads from the model's main graph. */
export interface OutputNeed {
  /** The names the pipeline looks for, in its order. */
  readonly names: readonly string[];
  /** The pipeline reads the first output when none has these names. */
  readonly orFirst?: boolean;
  /** Its rank, where the pipeline depends on it (2: one row per sequence, 3: per token). */
  readonly rank?: number;
  /** What it is, for the message: `per-token logits [batch, tokens, labels]`. */
  readonly what: string;
  /**
   * Its last dimension is config.json's vocab_size (a language-model head) or the number of
   * id2label's classes, where the file fixes both: a token classifier's logits are rank 3 too.
   */
  readonly width?: 'vocab' | 'labels';
}

/** An input the task feeds in a shape of its own (TAPAS's token_type_ids [batch, tokens, 7]). */
export interface InputNeed {
  readonly name: string;
  readonly rank: number;
  readonly what: string;
}

export interface ModelNeeds {
  /** tokenizer.json. */
  readonly tokenizer?: boolean;
  /** preprocessor_config.json: an image processor or an audio feature extractor. */
  readonly preprocessor?: boolean;
  /** config.json's id2label: the names of the classes. */
  readonly labels?: boolean;
  /** Inputs the main graph must take, by name, or by name and rank. */
  readonly inputs?: readonly (string | InputNeed)[];
  /** The main graph takes this one input and no other (a tabular model's feature rows). */
  readonly soleInput?: { readonly rank: number; readonly what: string };
  /** A decoder with its KV cache: past_key_values.* inputs on the main graph. */
  readonly cache?: boolean;
  readonly outputs?: readonly OutputNeed[];
  /** The graphs: an encoder with its decoder (encoder_model + decoder_model[_merged]), or named ones. */
  readonly graphs?: 'encoderDecoder' | readonly (readonly string[])[];
}

/** What a model folder declares, read by model-facts.ts. */
export interface ModelFacts {
  hasTokenizer: boolean;
  hasPreprocessor: boolean;
  hasLabels: boolean;
  /** config.json's vocab_size and the number of id2label's classes, where it declares them. */
  vocabSize: number | undefined;
  labelCount: number | undefined;
  /** Each loaded graph's signature, by graph name. */
  graphs: ReadonlyMap<string, OnnxSignature>;
  /** The main graph's name. */
  main: string;
}

/** What the model lacks for the task, each as a clause of one sentence; empty when it fits. */
export function misfits(needs: ModelNeeds, facts: ModelFacts): string[] {
  const missing: string[] = [];
  if (needs.labels === true && !facts.hasLabels) missing.push('its config.json has no id2label');
  if (needs.tokenizer === true && !facts.hasTokenizer) missing.push('it has no tokenizer.json');
  if (needs.preprocessor === true && !facts.hasPreprocessor)
    missing.push('it has no preprocessor_config.json (image processor or feature extractor)');
  const graphNames = [...facts.graphs.keys()];
  if (needs.graphs === 'encoderDecoder') {
    if (!facts.graphs.has('encoder_model') || !graphNames.some((g) => g.startsWith('decoder_model')))
      missing.push(
        `it is not an encoder–decoder export (encoder_model.onnx with decoder_model_merged.onnx or decoder_model.onnx; it has ${graphNames.join(', ')})`,
      );
    // The decoder's inputs and outputs are judged by the pipeline, which knows its variants.
    return missing;
  }
  if (needs.graphs !== undefined && !needs.graphs.some((set) => set.every((g) => facts.graphs.has(g))))
    missing.push(
      `its graphs are not ${needs.graphs.map((set) => set.map((g) => `${g}.onnx`).join(' + ')).join(' or ')} (it has ${graphNames.map((g) => `${g}.onnx`).join(', ')})`,
    );
  const main = facts.graphs.get(facts.main);
  if (main === undefined) return missing;
  const inputs = main.inputs.map((v) => v.name);
  const wanted = (needs.inputs ?? []).map((n) => (typeof n === 'string' ? { name: n } : n));
  const absent = wanted.filter(({ name }) => !inputs.includes(name)).map(({ name }) => name);
  if (absent.length > 0)
    missing.push(`its inputs have no ${absent.join(', ')} (inputs: ${inputs.join(', ')})`);
  for (const need of wanted) {
    const input = main.inputs.find((v) => v.name === need.name);
    if (!('rank' in need) || input === undefined || !hasOtherRank(input, need.rank)) continue;
    missing.push(
      `its input ${input.name} has rank ${input.shape?.length ?? '?'} [${shapeText(input)}], not ${need.rank} (${need.what})`,
    );
  }
  const sole = needs.soleInput;
  const [first] = main.inputs;
  if (
    sole !== undefined &&
    (main.inputs.length !== 1 || first === undefined || hasOtherRank(first, sole.rank))
  )
    missing.push(
      `it does not take one input of ${sole.what} (inputs: ${main.inputs.map((v) => `${v.name} [${shapeText(v)}]`).join(', ')})`,
    );
  if (needs.cache === true && !inputs.some((name) => name.startsWith('past_key_values.')))
    missing.push(
      `it is not a decoder with a KV cache (no past_key_values.* inputs; inputs: ${inputs.join(', ')})`,
    );
  for (const need of needs.outputs ?? []) {
    const problem = outputProblem(need, main.outputs, facts);
    if (problem !== undefined) missing.push(problem);
  }
  return missing;
}

function outputProblem(
  need: OutputNeed,
  outputs: readonly OnnxValue[],
  facts: ModelFacts,
): string | undefined {
  const named = need.names
    .map((name) => outputs.find((o) => o.name === name))
    .find((o) => o !== undefined);
  const read = named ?? (need.orFirst === true ? outputs[0] : undefined);
  const listed = outputs.map((o) => o.name).join(', ') || 'none';
  if (read !== undefined && (need.rank === undefined || !hasOtherRank(read, need.rank)))
    return widthProblem(need, read, facts);
  if (named === undefined)
    return `its outputs have no ${need.names.join(' or ')} (${need.what}; outputs: ${listed})`;
  return `its output ${named.name} has rank ${named.shape?.length ?? '?'} [${shapeText(named)}], not ${need.rank} (${need.what})`;
}

function widthProblem(need: OutputNeed, value: OnnxValue, facts: ModelFacts): string | undefined {
  if (need.width === undefined) return undefined;
  const last = value.shape?.[value.shape.length - 1];
  const expected = need.width === 'vocab' ? facts.vocabSize : facts.labelCount;
  if (typeof last !== 'number' || expected === undefined || last === expected) return undefined;
  const declared =
    need.width === 'vocab' ? `config.json's vocab_size ${expected}` : `its ${expected} labels`;
  return `its output ${value.name} [${shapeText(value)}] is ${last} wide, not ${declared} (${need.what})`;
}

/** False where the file does not declare the shape: the check then gives it the benefit. */
function hasOtherRank(value: OnnxValue, rank: number): boolean {
  return value.shape !== undefined && value.shape.length !== rank;
}

function shapeText(value: OnnxValue): string {
  return (value.shape ?? []).map((d) => d ?? '?').join(', ');
}

/** `model 'minilm' does not fit task textClassification: its config.json has no id2label and ...`. */
export function misfitMessage(model: string, task: string, missing: readonly string[]): string {
  const clauses =
    missing.length <= 1
      ? missing.join('')
      : `${missing.slice(0, -1).join(', ')} and ${missing[missing.length - 1] ?? ''}`;
  return `model '${model}' does not fit task ${task}: ${clauses}`;
}
