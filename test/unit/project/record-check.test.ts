// The integration tests' content check (test/helpers/redis-routes.ts) must look at every record:
// a wrong answer on the last of 2,000 records, which a sample would skip, has to fail it.
import { describe, expect, it } from 'vitest';
import {
  corpusRecords,
  expectEveryRecordClassified,
  referenceResults,
  type ClassifiedRecord,
} from '../../helpers/redis-routes.ts';

describe('expectEveryRecordClassified', () => {
  it('passes correct outputs and fails one wrong answer, field or missing record anywhere', async () => {
    const records = corpusRecords(2_000);
    const texts = [...new Set(records.map((r) => r.text))];
    const answers = await referenceResults(texts);
    const byText = new Map(texts.map((text, i) => [text, answers[i]]));
    const outputs: ClassifiedRecord[] = records.map((r) => ({
      ...r,
      result: byText.get(r.text) as ClassifiedRecord['result'],
    }));
    await expectEveryRecordClassified(records, outputs);

    const last = outputs.length - 1;
    const withScore = (score: number): ClassifiedRecord[] =>
      outputs.map((o, i) =>
        i === last ? { ...o, result: o.result.map((x) => ({ ...x, score: x.score + score })) } : o,
      );
    await expect(expectEveryRecordClassified(records, withScore(0.01))).rejects.toThrow();
    // Within the tolerance for batch-mate padding noise it still passes.
    await expectEveryRecordClassified(records, withScore(1e-6));
    const wrongLabel = outputs.map((o, i) => (i === 1_337 ? { ...o, label: 'other' } : o));
    await expect(expectEveryRecordClassified(records, wrongLabel)).rejects.toThrow();
    await expect(expectEveryRecordClassified(records, outputs.slice(1))).rejects.toThrow();
  });
});
