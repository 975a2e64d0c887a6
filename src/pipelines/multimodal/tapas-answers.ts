// From TAPAS's token logits to an answer, as TapasTokenizer.convert_logits_to_predictions and the
// table-question-answering pipeline do it: each token's probability (a sigmoid, in float32 as numpy
// computes it, logits below -88.7 raised to it), averaged over the tokens of each table cell (the
// header row is no cell), the cells above 0.5 selected in (row, column) order, and the aggregation
// head's best operator prefixed to the answer unless it is the "no aggregation" one.
import type { Table } from './table-input.ts';
import type { TapasEncoding } from './tapas-encoding.ts';

export interface TableAnswer {
  answer: string;
  /** [row, column] of each selected cell, rows counted from the first under the header. */
  coordinates: [number, number][];
  cells: string[];
  /** The aggregation operator, for models with an aggregation head. */
  aggregator?: string;
}

export interface Aggregation {
  labels: readonly string[];
  /** The label that means "no operator"; undefined when the config names none (then always prefixed). */
  none: number | undefined;
}

const THRESHOLD = 0.5;
const f32 = Math.fround;

/** Mean probability of each cell, keyed "column,row" (both from 0), in first-token order. */
export function cellProbabilities(
  encoding: TapasEncoding,
  logits: Float32Array,
): Map<string, number> {
  const sums = new Map<string, { sum: number; count: number }>();
  encoding.typeIds.forEach((types, t) => {
    const [segment, column = 0, row = 0] = types;
    if (segment !== 1 || column < 1 || row < 1) return;
    const x = Math.max(logits[t] as number, f32(-88.7));
    const p = f32(1 / f32(1 + f32(Math.exp(-x))));
    const key = `${column - 1},${row - 1}`;
    const cell = sums.get(key) ?? { sum: 0, count: 0 };
    cell.sum += p;
    cell.count += 1;
    sums.set(key, cell);
  });
  return new Map([...sums].map(([key, { sum, count }]) => [key, sum / count]));
}

/** The cells whose mean probability passes the threshold, as "column,row" keys. */
export function selectedCells(probabilities: ReadonlyMap<string, number>): Set<string> {
  return new Set([...probabilities].filter(([, p]) => p > THRESHOLD).map(([key]) => key));
}

export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i += 1)
    if ((values[i] as number) > (values[best] as number)) best = i;
  return best;
}

export function tableAnswer(
  table: Table,
  encoding: TapasEncoding,
  logits: Float32Array,
  aggregation: { logits: Float32Array; spec: Aggregation } | undefined,
): TableAnswer {
  const coordinates = [...selectedCells(cellProbabilities(encoding, logits))]
    .map((key): [number, number] => {
      const [column = 0, row = 0] = key.split(',').map(Number);
      return [row, column];
    })
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const cells = coordinates.map(([row, column]) => table.rows[row]?.[column] ?? '');
  if (aggregation === undefined) return { answer: cells.join(', '), coordinates, cells };
  const best = argmax(aggregation.logits);
  const aggregator = aggregation.spec.labels[best] ?? String(best);
  const prefix = best === aggregation.spec.none ? '' : `${aggregator} > `;
  return { answer: prefix + cells.join(', '), coordinates, cells, aggregator };
}
