// Which files of a Hub repository one model variant needs. ONNX repositories on the Hub hold
// several precisions side by side (transformers.js and onnx-community name them with a suffix in
// `onnx/`; Optimum exports put `model.onnx` at the root), so a pull takes the configs, the
// tokenizer and preprocessor files, and the chosen variant's graphs with their external data only.

/**
 * Variant name -> the suffix of its ONNX files (`model_fp16.onnx`); fp32 has none. The names and
 * their meaning are the model loader's `variant` (a suffix as written), so the variant pulled is
 * the variant loaded. transformers.js's `q8` is the `quantized` suffix.
 */
export const VARIANT_SUFFIXES: Readonly<Record<string, string>> = {
  fp32: '',
  fp16: '_fp16',
  int8: '_int8',
  uint8: '_uint8',
  quantized: '_quantized',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

export const VARIANTS = Object.keys(VARIANT_SUFFIXES);
export const DEFAULT_VARIANT = 'fp32';

/** Folders an ONNX export lives in, in the order they are looked at. */
const ONNX_FOLDERS = ['onnx/', ''];

/** Small files that describe the model, its tokenizer or its preprocessor: always pulled. */
const DESCRIPTION =
  /^(?:[^/]+\.(?:json|txt|model|tiktoken)|1_Pooling\/config\.json|LICENSE|README\.md)$/;

export interface VariantFiles {
  /** Every file to pull, sorted. */
  files: string[];
  /** The chosen ONNX graphs (repository paths), sorted. */
  graphs: string[];
}

/** Suffixes longest first, so `model_q4f16.onnx` is not read as a `_q4` file. */
const SUFFIXES = [...new Set(Object.values(VARIANT_SUFFIXES))].sort((a, b) => b.length - a.length);

function suffixOf(onnxName: string): string {
  const stem = onnxName.slice(0, -'.onnx'.length);
  return SUFFIXES.find((s) => s !== '' && stem.endsWith(s)) ?? '';
}

/**
 * The files of `variant` among the repository's, or undefined when it has no graph of that
 * variant. External data is whatever the graph's name starts with followed by `_data` or `.data`
 * (`model.onnx_data`, `model.onnx.data`, `model.onnx_data_1`).
 */
export function variantFiles(
  repoFiles: readonly string[],
  variant: string,
): VariantFiles | undefined {
  const suffix = VARIANT_SUFFIXES[variant];
  if (suffix === undefined) return undefined;
  for (const folder of ONNX_FOLDERS) {
    const graphs = repoFiles
      .filter((f) => f.startsWith(folder) && !f.slice(folder.length).includes('/'))
      .filter((f) => f.endsWith('.onnx') && suffixOf(f.slice(folder.length)) === suffix)
      .sort();
    if (graphs.length === 0) continue;
    const data = repoFiles.filter((f) =>
      graphs.some((g) => f.startsWith(`${g}_data`) || f.startsWith(`${g}.data`)),
    );
    const described = repoFiles.filter((f) => DESCRIPTION.test(f));
    return { files: [...new Set([...described, ...graphs, ...data])].sort(), graphs };
  }
  return undefined;
}

/** The variants a repository offers (by their own files), for the message that refuses one it lacks. */
export function variantsIn(repoFiles: readonly string[]): string[] {
  const present = new Set(
    repoFiles
      .filter(
        (f) =>
          f.endsWith('.onnx') &&
          ONNX_FOLDERS.some((d) =>
            d === '' ? !f.includes('/') : f.startsWith(d) && !f.slice(d.length).includes('/'),
          ),
      )
      .map((f) => suffixOf(f.slice(f.lastIndexOf('/') + 1))),
  );
  return VARIANTS.filter((v) => present.has(VARIANT_SUFFIXES[v] ?? ''));
}
