// `<org>/<name>[@revision]` as `models pull` and a config's `hub:` write it.
import { ConfigError } from '../errors.ts';

export const DEFAULT_REVISION = 'main';

export interface RepoSpec {
  repo: string;
  revision: string;
}

/** The Hub's rule for repository ids: one slash, letters, digits, `-`, `_`, `.`, no `--` or `..`. */
const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function repoIdProblem(repo: string): string | undefined {
  if (!REPO_ID.test(repo) || repo.includes('--') || repo.includes('..'))
    return `'${repo}' is not a Hub repository id; write <org>/<name>, e.g. onnx-community/all-MiniLM-L6-v2-ONNX`;
  return undefined;
}

export function parseRepoSpec(text: string, field = 'repo'): RepoSpec {
  const at = text.indexOf('@');
  const repo = at < 0 ? text : text.slice(0, at);
  const revision = at < 0 ? DEFAULT_REVISION : text.slice(at + 1);
  const problem = repoIdProblem(repo);
  if (problem !== undefined) throw new ConfigError(`${field}: ${problem}`, { field });
  if (revision === '')
    throw new ConfigError(
      `${field}: '${text}' has an empty revision after @; write <org>/<name>@<branch, tag or commit>`,
      { field },
    );
  return { repo, revision };
}

/** What to type to pull it by hand. */
export function pullCommand(spec: RepoSpec, variant: string | undefined): string {
  return `hugot-stream models pull ${spec.repo}@${spec.revision}${variant === undefined ? '' : ` --variant ${variant}`}`;
}
