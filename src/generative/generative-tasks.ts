// The tasks a generative engine runs: the decoder-only loop's and the encoder–decoder loop's.
export const GENERATIVE_TASKS: readonly string[] = [
  'textGeneration',
  'text2textGeneration',
  'summarization',
  'translation',
  'imageToText',
  'imageTextToText',
];
