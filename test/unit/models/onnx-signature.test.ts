// The inputs and outputs read from an ONNX file's bytes are those ONNX Runtime gives a session
// of the same file, for every committed graph; a file that is not ONNX is refused by name.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOnnxSignature } from '../../../src/models/onnx-signature.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import { SessionFactory } from '../../../src/runtime/runtimes.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

async function graphsUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile() && entry.name.endsWith('.onnx')) found.push(join(entry.parentPath, entry.name));
  return found.sort();
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-signature-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('readOnnxSignature', () => {
  it("gives every committed graph's input and output names as a session does", async () => {
    const graphs = [
      ...(await graphsUnder(join(ROOT, 'test', 'fixtures', 'models'))),
      ...(await graphsUnder(join(ROOT, 'models'))),
    ];
    expect(graphs.length).toBeGreaterThan(40);
    const factory = new SessionFactory();
    const options = compileRuntimeOptions({ binding: 'onnxruntime-node' });
    for (const graph of graphs) {
      const signature = await readOnnxSignature(graph);
      const session = await factory.open(graph, options);
      try {
        expect(signature.inputs.map((v) => v.name), graph).toEqual(session.inputNames);
        expect(signature.outputs.map((v) => v.name), graph).toEqual(session.outputNames);
      } finally {
        await session.release();
      }
    }
  });

  it('reads element types and fixed and symbolic dimensions', async () => {
    const path = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8', 'model.onnx');
    const { inputs, outputs } = await readOnnxSignature(path);
    expect(inputs[0]).toEqual({
      name: 'input_ids',
      elementType: 7,
      shape: ['batch_size', 'sequence_length'],
    });
    expect(outputs).toEqual([
      { name: 'last_hidden_state', elementType: 1, shape: ['batch_size', 'sequence_length', 384] },
    ]);
  });

  it('refuses a file that is not an ONNX model, naming it', async () => {
    const path = join(scratch, 'model.onnx');
    await writeFile(path, '{"not": "onnx"}');
    const refused = readOnnxSignature(path);
    await expect(refused).rejects.toMatchObject({ name: 'ModelFolderError', field: 'onnxFile' });
    await expect(refused).rejects.toThrow(`${path} is not a readable ONNX model`);
    await expect(readOnnxSignature(join(scratch, 'absent.onnx'))).rejects.toThrow(/cannot open/);
  });
});
