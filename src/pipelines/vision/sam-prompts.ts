// A mask-generation input's prompts -> the decoder graph's input_points / input_labels, as
// SamProcessor scales the coordinates and SamPromptEncoder embeds them. The graph takes prompts the
// way the original SAM ONNX export does (scripts/models/kit/sam.py): a box is its two corners
// labelled 2 and 3, and a prompt without a box ends with a (0, 0) point labelled -1, the padding
// point SamPromptEncoder appends itself in that case.
import { Tensor } from '../../runtime/tensor.ts';
import { InputError } from '../../errors.ts';
import { isObject } from '../task-definition.ts';
import type { ImageInput } from './image-decode.ts';

export interface MaskGenerationInput {
  image: ImageInput;
  /** [x, y] in the original image's pixels; together they make one prompt. */
  points?: [number, number][];
  /** One per point: 1 on the object, 0 off it, -1 ignored (SAM's labels). Default all 1. */
  labels?: number[];
  /** [x0, y0, x1, y1] each: one prompt per box (with the points, when both are given: one box). */
  boxes?: [number, number, number, number][];
}

const LABELS = new Set([-1, 0, 1]);
const BOX_CORNER_LABELS = [2, 3];
const PAD_LABEL = -1;

/** Why an input is not a mask-generation input, or undefined when it is. */
export function promptProblem(input: unknown): string | undefined {
  if (!isObject(input)) return 'must be {image, points?, labels?, boxes?}';
  const { points, labels, boxes } = input;
  if (points === undefined && boxes === undefined) return 'needs points or boxes (or both)';
  if (points !== undefined && !listOf(points, 2)) return 'points must be a non-empty [[x, y], ...]';
  if (boxes !== undefined && !listOf(boxes, 4))
    return 'boxes must be a non-empty [[x0, y0, x1, y1], ...]';
  if (labels !== undefined) {
    if (points === undefined) return 'labels need points';
    if (
      !Array.isArray(labels) ||
      labels.length !== (points as unknown[]).length ||
      !labels.every((l) => LABELS.has(l as number))
    )
      return 'labels must give each point 1, 0 or -1';
  }
  // SamModel pairs one point set with one box; several boxes with points would need one set each.
  if (points !== undefined && boxes !== undefined && (boxes as unknown[]).length !== 1)
    return 'points go with one box; send several boxes without points';
  return undefined;
}

function listOf(value: unknown, width: number): boolean {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (v) =>
        Array.isArray(v) &&
        v.length === width &&
        v.every((n) => typeof n === 'number' && Number.isFinite(n)),
    )
  );
}

export function toMaskInput(task: string, input: unknown, index: number): MaskGenerationInput {
  const field = `inputs[${index}]`;
  const problem = promptProblem(input);
  if (problem !== undefined) throw new InputError(`${task}: ${field} ${problem}`, { field });
  return input as MaskGenerationInput;
}

/**
 * SamProcessor's _normalize_coordinates: x and y scale by the rounded resized size over the
 * original, in float32 as the processor's torch tensor holds them.
 */
export function coordinateScale(
  height: number,
  width: number,
  longestEdge: number,
): { x: number; y: number } {
  const scale = longestEdge / Math.max(height, width);
  const newHeight = Math.trunc(height * scale + 0.5);
  const newWidth = Math.trunc(width * scale + 0.5);
  return { x: newWidth / width, y: newHeight / height };
}

/** input_points [1, prompts, n, 2] float32 and input_labels [1, prompts, n] int64 for one image. */
export function promptFeeds(
  input: MaskGenerationInput,
  scale: { x: number; y: number },
): { points: Tensor; labels: Tensor; prompts: number } {
  const f = Math.fround;
  const at = (x: number, y: number): [number, number] => [f(f(x) * scale.x), f(f(y) * scale.y)];
  const pointPart: [number, number, number][] = (input.points ?? []).map(([x, y], i) => [
    ...at(x, y),
    input.labels?.[i] ?? 1,
  ]);
  const prompts: [number, number, number][][] =
    input.boxes === undefined
      ? [[...pointPart, [0, 0, PAD_LABEL]]]
      : input.boxes.map(([x0, y0, x1, y1]) => [
          ...pointPart,
          [...at(x0, y0), BOX_CORNER_LABELS[0] as number],
          [...at(x1, y1), BOX_CORNER_LABELS[1] as number],
        ]);
  const n = (prompts[0] as unknown[]).length;
  const coords = new Float32Array(prompts.length * n * 2);
  const labels = new BigInt64Array(prompts.length * n);
  prompts.flat().forEach(([x, y, label], i) => {
    coords[i * 2] = x;
    coords[i * 2 + 1] = y;
    labels[i] = BigInt(label);
  });
  return {
    points: new Tensor('float32', coords, [1, prompts.length, n, 2]),
    labels: new Tensor('int64', labels, [1, prompts.length, n]),
    prompts: prompts.length,
  };
}
