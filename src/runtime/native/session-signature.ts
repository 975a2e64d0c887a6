// What a native session declares (its inputs and outputs with the pointers of their names) and
// the checks a run's feeds and fetches pass against it before any native call: a wrong name,
// dtype or shape becomes a FeedMismatchError naming the model and the tensor, never a crash.
import { FeedMismatchError } from '../../errors.ts';
import type { ResidentTensor, ValueMetadata } from '../session.ts';
import type { Tensor } from '../tensor.ts';
import type { Pointer } from './ort-library.ts';

export interface DeclaredValue {
  /** The name as ONNX Runtime allocated it: what Run takes. */
  pointer: Pointer;
  meta: ValueMetadata;
}

export class SessionSignature {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  private readonly inputs: ReadonlyMap<string, DeclaredValue>;
  private readonly outputs: ReadonlyMap<string, Pointer>;
  /** The model file, for errors. */
  private readonly onnxPath: string;

  constructor(
    onnxPath: string,
    inputs: readonly DeclaredValue[],
    outputs: readonly DeclaredValue[],
  ) {
    this.onnxPath = onnxPath;
    this.inputNames = inputs.map((v) => v.meta.name);
    this.outputNames = outputs.map((v) => v.meta.name);
    this.inputMetadata = inputs.map((v) => v.meta);
    this.outputMetadata = outputs.map((v) => v.meta);
    this.inputs = new Map(inputs.map((v) => [v.meta.name, v]));
    this.outputs = new Map(outputs.map((v) => [v.meta.name, v.pointer]));
  }

  hasInput(name: string): boolean {
    return this.inputs.has(name);
  }

  /** The name pointer of an output `fetches` has already passed. */
  outputPointer(name: string): Pointer {
    return this.outputs.get(name) as Pointer;
  }

  /** The feeds with their names' pointers; `linked` inputs come from another run instead. */
  feeds<T extends Tensor | ResidentTensor>(
    feeds: Readonly<Record<string, T>>,
    linked: ReadonlySet<string> = new Set(),
  ): [string, Pointer, T][] {
    const entries: [string, Pointer, T][] = [];
    for (const [name, tensor] of Object.entries(feeds)) {
      const input = this.declaredInput(name);
      checkTensor(input.meta, tensor, (why) => this.mismatch(name, why));
      entries.push([name, input.pointer, tensor]);
    }
    for (const name of linked) this.declaredInput(name);
    const missing = this.inputNames.filter(
      (name) => feeds[name] === undefined && !linked.has(name),
    );
    if (missing.length > 0)
      throw this.mismatch(
        missing[0] as string,
        `is missing from the feeds (missing: ${missing.join(', ')})`,
      );
    return entries;
  }

  fetches(fetches: readonly string[]): readonly string[] {
    for (const name of fetches)
      if (!this.outputs.has(name))
        throw this.mismatch(
          name,
          `is not an output of the model; outputs: ${this.outputNames.join(', ')}`,
        );
    return fetches;
  }

  private declaredInput(name: string): DeclaredValue {
    const input = this.inputs.get(name);
    if (input === undefined)
      throw this.mismatch(
        name,
        `is not an input of the model; inputs: ${this.inputNames.join(', ')}`,
      );
    return input;
  }

  private mismatch(tensor: string, why: string): FeedMismatchError {
    return new FeedMismatchError(`${this.onnxPath}: tensor '${tensor}' ${why}`, { field: tensor });
  }
}

function checkTensor(
  meta: ValueMetadata,
  tensor: { type: Tensor.Type; dims: readonly number[] },
  fail: (why: string) => Error,
): void {
  if (!meta.isTensor) throw fail('is not a tensor input; the native binding feeds tensors only');
  const expected = meta;
  if (tensor.type !== expected.type)
    throw fail(`is ${tensor.type}, the model takes ${expected.type}`);
  if (expected.shape.length === 0) return;
  if (tensor.dims.length !== expected.shape.length)
    throw fail(
      `has ${tensor.dims.length} dimensions [${tensor.dims.join(', ')}], the model takes ${expected.shape.length} [${expected.shape.join(', ')}]`,
    );
  expected.shape.forEach((dim, i) => {
    if (typeof dim === 'number' && dim >= 0 && tensor.dims[i] !== dim)
      throw fail(
        `has dimension ${i} = ${tensor.dims[i]}, the model takes ${dim} ([${expected.shape.join(', ')}])`,
      );
  });
}
