// The prompts of bench/generate.ts beyond its mixed-length e-mails: an enrichment workload (one
// long instruction shared by every request, then a record of its own) for the prefix cache, and a
// labelling workload with a JSON schema for structured output, with the check of its outputs.
import Ajv from 'ajv';
import type { TextTokenizer } from '../../src/pipelines/runtime/text-tokenizer.ts';

/** Model names the bench takes for `--model`; anything else is a model folder. */
const MODELS: Record<string, string> = {
  'llama-100m': '.cache/models/llama-100m',
  smollm2: '.cache/models/smollm2-135m-instruct',
  'smollm2-135m-instruct': '.cache/models/smollm2-135m-instruct',
};

export function modelFolder(name: string): string {
  return MODELS[name] ?? name;
}

// Long on purpose: a route's instruction, the part every record's prompt repeats.
const INSTRUCTION = `You are the triage assistant of a customer support team that receives several thousand e-mails
every day from customers, partners, suppliers and automated systems. Your answer is read by a
program, not by a person, so follow the format exactly and add nothing else. For every e-mail,
decide first which queue it belongs to. The queues are: billing (invoices, refunds, double charges,
payment methods, tax documents), technical (crashes, errors, slow pages, data that looks wrong,
questions about the API or integrations), account (sign-in problems, password resets, changes of
address or owner, closing an account, privacy requests under the GDPR), sales (prices, quotes,
upgrades, new contracts, partnership offers), and other (everything else, including newsletters,
out-of-office replies and spam). Then decide the urgency: high when money is lost, a service is
down for the customer, a legal deadline is mentioned or the sender says it is urgent for a good
reason; normal for ordinary requests; low for information, thanks, marketing and automated mail.
Then write a summary of at most twenty words in plain English that says what the sender wants,
without names, e-mail addresses, phone numbers or account numbers. Never invent facts that are not
in the e-mail. If the e-mail is in another language, summarise it in English. If it contains several
requests, name the most important one first. If it is empty, unreadable or only a signature, use the
queue other, the urgency low and the summary "no readable request". Answer on one line as: queue;
urgency; summary.`;

/**
 * The shared instruction cut to `prefixTokens` tokens and the prompts it starts: one per record,
 * each record cut to the next of `recordLengths` tokens.
 */
export async function sharedPrefixPrompts(
  tokenizer: TextTokenizer,
  records: readonly string[],
  prefixTokens: number,
  recordLengths: readonly number[],
): Promise<string[]> {
  const cut = async (text: string, tokens: number): Promise<string> => {
    const [encoded] = await tokenizer.encode([text], {
      truncation: false,
      addSpecialTokens: false,
    });
    return tokenizer.decode((encoded?.ids ?? []).slice(0, tokens), true);
  };
  const instruction = await cut(INSTRUCTION.replaceAll('\n', ' ').repeat(2), prefixTokens);
  return Promise.all(
    records.map(
      async (record, i) =>
        `${instruction}\n\nE-mail:\n${await cut(record, recordLengths[i % recordLengths.length] as number)}\n\nAnswer:`,
    ),
  );
}

/** What the structured pass asks every output to be. */
export const LABEL_SCHEMA = {
  type: 'object',
  properties: {
    label: { enum: ['spam', 'ham', 'newsletter', 'other'] },
    urgent: { type: 'boolean' },
    reason: { type: 'string', maxLength: 40 },
  },
  required: ['label', 'urgent', 'reason'],
} as const;

export const LABEL_INSTRUCTION =
  'Label the e-mail below as JSON with "label" (spam, ham, newsletter or other), "urgent" ' +
  '(true or false) and a short "reason".\n\nE-mail:\n';

const validLabel = new Ajv().compile(LABEL_SCHEMA);

/** True when the text parses as JSON that LABEL_SCHEMA accepts. */
export function validLabelJson(text: string): boolean {
  try {
    return validLabel(JSON.parse(text)) === true;
  } catch {
    return false;
  }
}
