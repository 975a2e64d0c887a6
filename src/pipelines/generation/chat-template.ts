// Chat messages -> prompt text through the model's Jinja chat template (tokenizer_config.json), as
// Python's tokenizer.apply_chat_template renders it.
import { Template } from '@huggingface/jinja';
import { InputError, ModelFolderError } from '../../errors.ts';
import type { TextTokenizer } from '../runtime/text-tokenizer.ts';
import type { ToolSpec } from './tool-calls.ts';

export interface ChatMessage {
  role: string;
  content: string;
  /** An assistant turn's earlier calls, a tool result's name and call id: passed to the template. */
  tool_calls?: unknown[];
  name?: string;
  tool_call_id?: string;
}

/** A processor's content part: an image placeholder or a text. */
export type ContentPart = { type: 'image' } | { type: 'text'; text: string };

/** A message of a multimodal chat, as processors' templates take it: text or a list of parts. */
export interface PartsMessage {
  role: string;
  content: string | readonly ContentPart[];
}

export interface RenderOptions {
  /** Append the assistant header so the model answers (Python's add_generation_prompt). */
  addGenerationPrompt: boolean;
  /** Leave the last message open so the model continues it (Python's continue_final_message). */
  continueFinalMessage: boolean;
  /** Tools offered to the model (Python's `tools=`), for a template that renders them. */
  tools?: readonly ToolSpec[] | undefined;
}

export class ChatTemplate {
  private readonly template: Template;
  private readonly context: Record<string, unknown>;
  /** Whether the template renders a `tools` variable (else tools go in a system message). */
  readonly rendersTools: boolean;

  private constructor(template: Template, context: Record<string, unknown>, source: string) {
    this.template = template;
    this.context = context;
    this.rendersTools = /\btools\b/.test(source);
  }

  /** The tokenizer's default chat template, or undefined when it declares none. */
  static fromTokenizer(tokenizer: TextTokenizer): ChatTemplate | undefined {
    const declared = tokenizer.config.chat_template;
    const source =
      typeof declared === 'string'
        ? declared
        : Array.isArray(declared)
          ? declared.find((t) => t.name === 'default')?.template
          : undefined;
    if (source === undefined) return undefined;
    return ChatTemplate.fromSource(source, tokenizer, `${tokenizer.folder}/tokenizer_config.json`);
  }

  /** A template found elsewhere (a processor's chat_template.jinja), `origin` naming the file. */
  static fromSource(source: string, tokenizer: TextTokenizer, origin: string): ChatTemplate {
    let template: Template;
    try {
      template = new Template(source);
    } catch (cause) {
      throw new ModelFolderError(
        `the chat_template in ${origin} does not parse: ${String(cause)}`,
        { cause, field: 'chat_template' },
      );
    }
    const { special } = tokenizer;
    // Python passes the special tokens map into the template's namespace (the Jinja runtime
    // already provides raise_exception).
    const context: Record<string, unknown> = {
      bos_token: special.bos ?? '',
      eos_token: special.eos ?? '',
      pad_token: special.pad ?? '',
      unk_token: special.unk ?? '',
    };
    return new ChatTemplate(template, context, source);
  }

  render(messages: readonly ChatMessage[], options: RenderOptions): string {
    return this.renderWith(messages, options, messages[messages.length - 1]?.content);
  }

  /**
   * Messages with image and text parts. A final message continued is cut after its last text
   * part, the part Python's processors continue.
   */
  renderParts(messages: readonly PartsMessage[], options: RenderOptions): string {
    const content = messages[messages.length - 1]?.content;
    const last =
      typeof content === 'string'
        ? content
        : content
            ?.filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text')
            .at(-1)?.text;
    return this.renderWith(messages, options, last);
  }

  private renderWith(
    messages: readonly (ChatMessage | PartsMessage)[],
    options: RenderOptions,
    lastText: string | undefined,
  ): string {
    let text: string;
    try {
      text = this.template.render({
        ...this.context,
        messages,
        add_generation_prompt: options.addGenerationPrompt,
        ...(options.tools !== undefined ? { tools: options.tools } : {}),
      });
    } catch (cause) {
      throw new InputError(`chat template could not render the messages: ${String(cause)}`, {
        cause,
        field: 'messages',
      });
    }
    return options.continueFinalMessage && lastText !== undefined ? cutAfter(text, lastText) : text;
  }
}

/** Python's continue_final_message: end the prompt right after the last message's content. */
function cutAfter(rendered: string, content: string): string {
  const at = rendered.lastIndexOf(content.trim());
  if (at < 0) return rendered;
  const lead = content.trimStart();
  return rendered.slice(at, at + lead.length) === content
    ? rendered.slice(0, at + lead.length)
    : rendered.slice(0, at + content.trim().length);
}
