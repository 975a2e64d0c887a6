// Pieces the tasks' pythonOutput functions share: the generated text whichever path made it (a
// pipeline's own key, or `text` on the generative engine), and Python's return_full_text.
import { isObject } from './task-definition.ts';

/** The generated text of a result: the pipeline's key (`summaryText`), else the engine's `text`. */
export function generatedText(result: unknown, key: string): string {
  if (!isObject(result)) return '';
  const text = result[key] ?? result['text'];
  return typeof text === 'string' ? text : '';
}

/**
 * Python's generated_text for a prompt: the new text alone, the prompt string and the new text,
 * or for chat messages the conversation with the answer as a new assistant turn.
 */
export function fullText(prompt: unknown, text: string, full: boolean): unknown {
  if (!full) return text;
  if (typeof prompt === 'string') return prompt + text;
  if (Array.isArray(prompt))
    return [...(prompt as unknown[]), { role: 'assistant', content: text }];
  return text;
}
