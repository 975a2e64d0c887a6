// Where the Hub is and where its files go, read from the same environment variables the Python
// `huggingface_hub` reads, so that one cache and one token serve both. Read once and passed in.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export type Environment = Record<string, string | undefined>;

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

export interface HubSettings {
  /** `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`. */
  cacheDir: string;
  /** `HF_ENDPOINT` (a mirror), else huggingface.co; no trailing slash. */
  endpoint: string;
  /** `HF_TOKEN`, else the token file `huggingface-cli login` writes. Never logged. */
  token: string | undefined;
  /** `HF_HUB_OFFLINE`: nothing is fetched; only what the cache holds is used. */
  offline: boolean;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);

export function hubSettings(env: Environment = process.env): HubSettings {
  const home =
    env['HF_HOME'] ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'huggingface');
  return {
    cacheDir: env['HF_HUB_CACHE'] ?? join(home, 'hub'),
    endpoint: (env['HF_ENDPOINT'] ?? DEFAULT_ENDPOINT).replace(/\/+$/, ''),
    token: nonEmpty(env['HF_TOKEN']) ?? storedToken(env['HF_TOKEN_PATH'] ?? join(home, 'token')),
    offline: TRUE.has((env['HF_HUB_OFFLINE'] ?? '').trim().toLowerCase()),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** A missing token file is the usual case (no login), not an error. */
function storedToken(path: string): string | undefined {
  try {
    return nonEmpty(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}
