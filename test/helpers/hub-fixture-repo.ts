// The few-KB repository behind the committed Python-made cache (test/fixtures/hub-cache/): the
// fixture script serves it to huggingface_hub and the cache test compares what it reads with it.
// Changing a byte here means building the fixture again (test/helpers/hub-cache-fixture.ts).
export const PY_CACHE_REPO = 'hugot-test/py-cache';
/** The variant the fixture script downloads. */
export const PY_CACHE_VARIANT = 'quantized';

export function pyCacheRepoFiles(): Map<string, Buffer> {
  const json = (v: unknown): Buffer => Buffer.from(`${JSON.stringify(v, null, 2)}\n`);
  const graph = (name: string, size: number): Buffer =>
    Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + name.length * 13) % 251));
  return new Map<string, Buffer>([
    ['README.md', Buffer.from('# py-cache\nA fixture repository for the Hub cache tests.\n')],
    ['config.json', json({ model_type: 'bert', id2label: { 0: 'NEGATIVE', 1: 'POSITIVE' } })],
    ['tokenizer.json', json({ version: '1.0', truncation: null, model: { type: 'WordPiece' } })],
    ['tokenizer_config.json', json({ do_lower_case: true, model_max_length: 512 })],
    ['onnx/model.onnx', graph('fp32', 3000)],
    ['onnx/model_quantized.onnx', graph('q8', 1500)],
  ]);
}
