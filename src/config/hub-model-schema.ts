// A model from the Hugging Face Hub in a config: `hub: <org>/<name>` with an optional revision
// and variant instead of a `path`. Checked here with the rest of the config; the pull itself
// happens at start-up (src/worker/hub-models.ts).
import { z } from 'zod';
import { repoIdProblem } from '../hub/repo-spec.ts';

export const hubModelFields = {
  /** `<org>/<name>` on the Hub (or the mirror in HF_ENDPOINT). */
  hub: z
    .string()
    .superRefine((repo, ctx) => {
      const problem = repoIdProblem(repo);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  /** A branch, tag or commit; default main. A commit pins the model: `models pull` prints it. */
  revision: z.string().min(1).optional(),
};

/** Exactly one of `path` and `hub`; `revision` and `variant` only with `hub`. */
export function checkModelSource(model: unknown, ctx: z.RefinementCtx): void {
  const { path, hub, revision } = model as Record<string, unknown>;
  if (path !== undefined && hub !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['hub'],
      message:
        'path and hub are both set; a model is a local folder (path) or a Hub repository (hub), not both',
    });
  if (path === undefined && hub === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['path'],
      message: 'a model needs a path (its folder) or hub (<org>/<name> on the Hugging Face Hub)',
    });
  if (revision !== undefined && hub === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['revision'],
      message: 'revision is for a Hub model; add hub: <org>/<name> or remove revision',
    });
}
