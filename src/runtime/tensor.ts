// The tensor every pipeline builds and reads: onnxruntime-common's, a plain JS object (type, data,
// dims) that neither binding owns, so pipelines import it from here and not from a binding.
export { Tensor } from 'onnxruntime-common';
