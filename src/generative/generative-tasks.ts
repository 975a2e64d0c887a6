// The tasks a generative engine runs: the decoder-only loop's, the cohort loop's (encoder–decoders,
// vision-language models) and the segment loop's (speech recognition and synthesis).
export const GENERATIVE_TASKS: readonly string[] = [
  'textGeneration',
  'text2textGeneration',
  'summarization',
  'translation',
  'imageToText',
  'imageTextToText',
  'automaticSpeechRecognition',
  'textToSpeech',
  'textToAudio',
];
