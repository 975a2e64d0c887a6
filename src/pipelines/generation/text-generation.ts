// Causal language model generation for one request at a time, with the KV cache: the prompt is
// prefilled against an empty cache, then one token per step feeds the last step's presents back as
// the past. Greedy decoding gives Python generate()'s tokens; sampling is reproducible by seed.
// This is the reference path that batched engines are checked against. With a prefix cache
// (opt-in here, prefix-cache.ts) the prefill starts from the longest cached prefix of the prompt.
import { ConfigError, InputError } from '../../errors.ts';
import { ChatTemplate, type ChatMessage } from './chat-template.ts';
import {
  generationOptionsSchema,
  mergeOptions,
  parseGenerationOptions,
  readGenerationDefaults,
  resolveSettings,
  type GenerationDefaults,
  type GenerationOptions,
  type GenerationSettings,
} from './generation-options.ts';
import {
  emptyKvState,
  kvLayoutOf,
  releaseResident,
  residentCache,
  runStep,
  type KvLayout,
  type StepTokens,
} from './kv-cache.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { compilePrefixCacheOptions, PrefixCache, type PrefixCacheOptions } from './prefix-cache.ts';
import { HostPrefixBlocks, ResidentPrefixBlocks } from './prefix-blocks.ts';
import { GenerationProgress, type GenerationResult } from './generation-progress.ts';
import { isObject, UNIT_COST, type InputCheck, type TaskDefinition } from '../task-definition.ts';
import { FormatCompiler } from './structured/format-constraint.ts';
import { toolsSystemPrompt, type ToolSpec } from './tool-calls.ts';
import { fullText, generatedText } from '../python-output.ts';
import { readySchema } from '../../options/lazy-schema.ts';

export type { ChatMessage } from './chat-template.ts';
export type { GenerationOptions as TextGenerationOptions } from './generation-options.ts';

/** A prompt, or chat messages (with tools the model may call) rendered through its chat template. */
export type TextGenerationInput =
  | string
  | readonly ChatMessage[]
  | { messages: readonly ChatMessage[]; tools?: readonly ToolSpec[] };

export type { FinishReason, GenerationResult } from './generation-progress.ts';

/** A stream yields one `token` event per generated token, then `done`. */
export type GenerationEvent =
  | {
      type: 'token';
      tokenId: number;
      /** Text this token settled; the texts of all token events add up to the result's text. */
      text: string;
    }
  | { type: 'done'; result: GenerationResult };

export interface TextGenerationSetup {
  /** Keep the KV of prompt prefixes for later prompts that start alike. Default: off. */
  prefixCache?: PrefixCacheOptions;
}

export type Prompt =
  { kind: 'text'; text: string } | { kind: 'chat'; messages: ChatMessage[]; tools?: ToolSpec[] };

const TASK = 'textGeneration';

export class TextGenerationPipeline extends BasePipeline<
  TextGenerationInput,
  GenerationResult,
  typeof generationOptionsSchema
> {
  readonly layout: KvLayout;
  /** Present when the setup asked for one with maxBytes > 0. */
  readonly prefixCache: PrefixCache | undefined;
  private readonly chatTemplate: ChatTemplate | undefined;
  private readonly formats: FormatCompiler;
  private defaults: Promise<GenerationDefaults> | undefined;

  constructor(
    model: LoadedModel,
    options: GenerationOptions = {},
    setup: TextGenerationSetup = {},
  ) {
    super(TASK, model, readySchema(generationOptionsSchema), options);
    this.layout = kvLayoutOf(model);
    const prefix =
      setup.prefixCache === undefined
        ? undefined
        : compilePrefixCacheOptions(setup.prefixCache, 'prefixCache');
    // Its blocks stay where the engine's loop leaves prefills' caches: on the device when they
    // are resident, so that neither a store nor a hit brings them to the host.
    this.prefixCache =
      prefix !== undefined && prefix.maxBytes > 0
        ? new PrefixCache(
            this.layout,
            prefix,
            residentCache(model, this.layout).prefills
              ? new ResidentPrefixBlocks(model, this.layout, prefix.blockTokens)
              : new HostPrefixBlocks(this.layout, prefix.blockTokens),
          )
        : undefined;
    this.chatTemplate = ChatTemplate.fromTokenizer(this.tokenizer);
    this.formats = new FormatCompiler(this.tokenizer.json, this.tokenizer.folder);
    // The pipeline's own format is compiled now, so a pattern too large fails at start-up.
    if (this.options.responseFormat !== undefined)
      this.formats.compile(this.options.responseFormat);
  }

  /** Generates for each input in turn (one request at a time); results in input order. */
  protected async runBatch(inputs: readonly TextGenerationInput[]): Promise<GenerationResult[]> {
    inputs.forEach((input, i) => toPrompt(input, `inputs[${i}]`));
    const results: GenerationResult[] = [];
    for (const input of inputs) results.push(await this.generate(input));
    return results;
  }

  async generate(
    input: TextGenerationInput,
    options?: GenerationOptions,
  ): Promise<GenerationResult> {
    for await (const event of this.stream(input, options)) {
      if (event.type === 'done') return event.result;
    }
    /* c8 ignore next */
    throw new Error('generation stream ended without a result');
  }

  /** The same generation as `generate`, one event per token as it is chosen. */
  async *stream(
    input: TextGenerationInput,
    options?: GenerationOptions,
  ): AsyncGenerator<GenerationEvent, void, undefined> {
    const prompt = toPrompt(input, 'input');
    const settings = await this.settings(options);
    const promptIds = await this.promptIds(prompt, settings.systemPrompt);
    const progress = new GenerationProgress(promptIds, settings, {
      toolCalls: prompt.kind === 'chat' && prompt.tools !== undefined,
    });
    const decode = (ids: readonly number[]): Promise<string> => this.decode(ids);
    const hit = await this.prefixCache?.lookup(promptIds);
    let state = hit?.state ?? emptyKvState(this.layout, 1);
    let tokens: StepTokens = { ids: [promptIds.slice(hit?.tokens ?? 0)] };
    let prefilled = false;
    while (!progress.done) {
      const step = await runStep(this.model.session, this.layout, state, tokens);
      // A resident cache's hit (its own columns) was this first run's past, and is not needed now.
      if (!prefilled && hit !== undefined) releaseResident([hit.state]);
      state = step.state;
      if (!prefilled) await this.prefixCache?.store(promptIds, state);
      prefilled = true;
      const { tokenId, text } = await progress.accept(
        progress.choose(step.logits[0] as Float32Array),
        decode,
      );
      yield { type: 'token', tokenId, text };
      tokens = { ids: [[tokenId]] };
    }
    yield { type: 'done', result: progress.result() };
  }

  /** The prompt's token ids, as Python's text-generation pipeline tokenizes it. */
  async promptIds(prompt: Prompt, systemPrompt: string | undefined): Promise<number[]> {
    if (prompt.kind === 'text' && systemPrompt === undefined) {
      const [encoded] = await this.encode([prompt.text], { truncation: false });
      return encoded?.ids ?? [];
    }
    const template = this.chatTemplate;
    if (template === undefined) {
      throw new InputError(
        `${TASK}: chat messages and systemPrompt need a chat_template in ` +
          `${this.tokenizer.folder}/tokenizer_config.json, and it has none`,
        { field: prompt.kind === 'chat' ? 'messages' : 'systemPrompt' },
      );
    }
    let messages =
      prompt.kind === 'chat' ? prompt.messages : [{ role: 'user', content: prompt.text }];
    if (systemPrompt !== undefined && messages[0]?.role !== 'system')
      messages = [{ role: 'system', content: systemPrompt }, ...messages];
    const tools = prompt.kind === 'chat' ? prompt.tools : undefined;
    if (tools !== undefined && !template.rendersTools) messages = offerTools(messages, tools);
    // Python treats a chat ending in an assistant message as a prefill to continue.
    const continueFinal = messages[messages.length - 1]?.role === 'assistant';
    const rendered = template.render(messages, {
      addGenerationPrompt: !continueFinal,
      continueFinalMessage: continueFinal,
      tools: template.rendersTools ? tools : undefined,
    });
    // The template writes any special tokens itself, so none are added (as in Python).
    const [encoded] = await this.encode([rendered], {
      truncation: false,
      addSpecialTokens: false,
    });
    return encoded?.ids ?? [];
  }

  async ready(): Promise<void> {
    await this.settings(undefined);
  }

  /** This pipeline's options under a call's, over generation_config.json's. */
  async settings(options: GenerationOptions | undefined): Promise<GenerationSettings> {
    const call = options === undefined ? undefined : parseGenerationOptions(options);
    this.defaults ??= readGenerationDefaults(this.model);
    const defaults = await this.defaults;
    const settings = resolveSettings(
      mergeOptions(this.options, call, options),
      defaults,
      this.model,
      TASK,
    );
    if (settings.responseFormat !== undefined) {
      if (settings.eosTokenIds.size === 0)
        throw new ConfigError(
          `${TASK}: responseFormat needs an EOS token to end a complete output, and ` +
            `${this.model.folder} declares none (eos_token_id)`,
          { field: 'responseFormat' },
        );
      settings.format = this.formats.compile(settings.responseFormat);
    }
    return settings;
  }

  /** Generated ids to text, as Python's pipeline decodes them. */
  async decode(ids: readonly number[]): Promise<string> {
    const text = await this.tokenizer.decode(ids, true);
    return this.tokenizer.config['clean_up_tokenization_spaces'] === true
      ? cleanUpTokenization(text)
      : text;
  }
}

/** Python's clean_up_tokenization, applied when the tokenizer config asks for it. */
export function cleanUpTokenization(text: string): string {
  return text
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

/** The tools described in the system message, for a chat template that does not render them. */
function offerTools(messages: readonly ChatMessage[], tools: readonly ToolSpec[]): ChatMessage[] {
  const offer = toolsSystemPrompt(tools);
  const [first, ...rest] = messages;
  if (first?.role === 'system')
    return [{ ...first, content: `${first.content}\n\n${offer}` }, ...rest];
  return [{ role: 'system', content: offer }, ...messages];
}

export function toPrompt(input: unknown, field: string): Prompt {
  if (typeof input === 'string') return { kind: 'text', text: input };
  const wrapped = isObject(input) && 'messages' in input;
  const messages = wrapped ? input['messages'] : input;
  if (Array.isArray(messages) && messages.length > 0) {
    const prompt: Prompt = {
      kind: 'chat',
      messages: messages.map((m: unknown, i) => toMessage(m, `${field}.messages[${i}]`)),
    };
    const tools = wrapped ? input['tools'] : undefined;
    if (tools !== undefined) prompt.tools = toTools(tools, `${field}.tools`);
    return prompt;
  }
  throw new InputError(
    `${TASK}: ${field} must be a prompt string, a non-empty array of chat messages, or {messages, tools?}`,
    { field },
  );
}

function toMessage(value: unknown, field: string): ChatMessage {
  if (isObject(value)) {
    const { role, content, tool_calls: calls, name, tool_call_id: callId } = value;
    // An assistant turn that only called tools may have no content.
    const text = content ?? (Array.isArray(calls) ? '' : undefined);
    if (typeof role === 'string' && typeof text === 'string') {
      const message: ChatMessage = { role, content: text };
      if (Array.isArray(calls)) message.tool_calls = calls as unknown[];
      if (typeof name === 'string') message.name = name;
      if (typeof callId === 'string') message.tool_call_id = callId;
      return message;
    }
  }
  throw new InputError(`${TASK}: ${field} must be {role: string, content: string}`, { field });
}

function toTools(value: unknown, field: string): ToolSpec[] {
  if (Array.isArray(value) && value.every((t) => isObject(t) && !Array.isArray(t)))
    return value as ToolSpec[];
  throw new InputError(`${TASK}: ${field} must be an array of tool (function) descriptions`, {
    field,
  });
}

export const textGenerationTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    cache: true,
    outputs: [
      {
        names: ['logits'],
        rank: 3,
        what: 'a language-model head [batch, tokens, vocab]',
        width: 'vocab',
      },
    ],
  },
  task: TASK,
  execution: 'decoderOnly',
  optionsSchema: generationOptionsSchema,
  create: (model, options) => new TextGenerationPipeline(model, options as GenerationOptions),
  // Python's [{generated_text}]; a structured output's parsed value and the tool calls, which
  // Python's pipeline has no keys for, stay beside it as `json` and `tool_calls`.
  pythonOutput: (result, call) => {
    const prompt = isObject(call.input) ? call.input['messages'] : call.input;
    const { json, toolCalls } = (isObject(result) ? result : {}) as Partial<GenerationResult>;
    return [
      {
        generated_text: fullText(prompt, generatedText(result, 'text'), call.returnFullText),
        ...(json !== undefined ? { json } : {}),
        ...(toolCalls !== undefined ? { tool_calls: toolCalls } : {}),
      },
    ];
  },
  inputSchema(input, check) {
    if (typeof input === 'string') return check.text(input);
    if (Array.isArray(input)) return checkMessages(input, check.field, check);
    if (isObject(input) && Array.isArray(input['messages'])) {
      if (Array.isArray(input['tools'])) check.list(input['tools'], `${check.field}.tools`);
      return checkMessages(input['messages'], `${check.field}.messages`, check);
    }
    check.fail('a prompt string or chat messages');
  },
  inputKind: 'text',
  async cost(input, meter) {
    return typeof input === 'string' ? { tokens: await meter.length(input), rows: 1 } : UNIT_COST;
  },
};

/** Chat messages: their number, and the length of every text content. */
function checkMessages(messages: readonly unknown[], at: string, check: InputCheck): void {
  check.list(messages, at);
  messages.forEach((m, i) => {
    if (isObject(m) && typeof m['content'] === 'string')
      check.text(m['content'], `${at}[${i}].content`);
  });
}
