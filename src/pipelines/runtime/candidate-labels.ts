// Candidate labels and the hypothesis template, as Python's zero-shot pipelines take them (text
// NLI and CLIP-style image classification alike): labels as a list or a comma-separated string,
// a template with one `{}` for the label, both checked when the config is read.
import type { z } from 'zod';
import { ConfigError } from '../../errors.ts';

/** A string is split on commas, as Python does; blank labels are dropped. */
export function labelsOf(candidateLabels: string | string[]): string[] {
  return typeof candidateLabels === 'string'
    ? candidateLabels
        .split(',')
        .map((label) => label.trim())
        .filter((label) => label !== '')
    : candidateLabels;
}

/**
 * `str.format` with one positional argument: `{}` and `{0}` take the label, `{{` and `}}` are
 * literal braces. Anything else in braces would fail in Python too.
 */
export function pythonFormat(template: string, label: string): string {
  return template.replace(/\{\{|\}\}|\{0?\}|\{[^}]*\}?|\}/g, (field) => {
    if (field === '{{') return '{';
    if (field === '}}') return '}';
    if (field === '{}' || field === '{0}') return label;
    throw new ConfigError(
      `hypothesisTemplate: '${field}' is not supported; use {} for the label and {{ }} for braces`,
      { field: 'options.hypothesisTemplate' },
    );
  });
}

/**
 * A schema refinement: at least one label, and a template with a place for it. Checked in the
 * options schema rather than when the model loads, so that validate-config finds them too.
 */
export function checkCandidateLabels(task: string) {
  return (
    options: { candidateLabels: string | string[]; hypothesisTemplate: string },
    ctx: z.RefinementCtx,
  ): void => {
    const [first] = labelsOf(options.candidateLabels);
    if (first === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['candidateLabels'],
        message: `${task}: candidateLabels must name at least one label`,
      });
      return;
    }
    const template = options.hypothesisTemplate;
    let problem: string | undefined;
    try {
      if (pythonFormat(template, first) === template)
        problem = `${task}: hypothesisTemplate "${template}" has no {} where the label should go`;
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    }
    if (problem !== undefined)
      ctx.addIssue({ code: 'custom', path: ['hypothesisTemplate'], message: problem });
  };
}
