// Tool calls in the Hermes style that Qwen, Hermes and many small instruct models were tuned on:
// the tools are offered as JSON in the prompt, and the model answers with one
// `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` block per call. A model whose chat
// template does not render `tools` gets the same instructions as a system message instead, so
// the tools are never silently dropped from the prompt.

/** A tool as chat templates take it: OpenAI's `{type: function, function: {...}}` or the function alone. */
export type ToolSpec = Record<string, unknown>;

export interface ToolCall {
  name: string;
  /** The arguments object (a JSON string the model wrote is parsed). */
  arguments: unknown;
}

const BLOCK = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;

/**
 * Every well-formed `<tool_call>` block of the text, in order. A block whose body is not a JSON
 * object with a string `name` is left out (the text still has it); a last block the model did
 * not close is read up to the end.
 */
export function parseToolCalls(text: string): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const match of text.matchAll(BLOCK)) {
    let body: unknown;
    try {
      body = JSON.parse((match[1] as string).trim()) as unknown;
    } catch {
      continue;
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) continue;
    const { name, arguments: args, parameters } = body as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') continue;
    let value: unknown = args ?? parameters ?? {};
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value) as unknown;
      } catch {
        // Kept as the model wrote it: the caller sees what it got.
      }
    }
    calls.push({ name, arguments: value });
  }
  return calls;
}

/** The system message that offers tools to a model whose chat template ignores `tools`. */
export function toolsSystemPrompt(tools: readonly ToolSpec[]): string {
  const listed = tools.map((tool) => JSON.stringify(tool)).join('\n');
  return (
    'Functions you can call are listed as JSON inside <tools></tools>:\n' +
    `<tools>\n${listed}\n</tools>\n\n` +
    'To call one, answer with its name and arguments as a JSON object inside ' +
    '<tool_call></tool_call> tags, one block per call:\n' +
    '<tool_call>\n{"name": "<function name>", "arguments": {<arguments>}}\n</tool_call>'
  );
}
