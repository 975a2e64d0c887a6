// The two Hub endpoints a pull needs, over fetch: a revision's commit and file list
// (`/api/models/<repo>/revision/<rev>?blobs=true`) and a file's bytes (`/<repo>/resolve/<commit>/
// <path>`, which redirects LFS files to a CDN). Redirects are followed by hand so that the token
// goes to the Hub only, never to the CDN host it redirects to, as huggingface_hub does.
import { HubError } from '../errors.ts';
import type { HubSettings } from './hub-settings.ts';

export interface RepoFile {
  /** The path inside the repository. */
  path: string;
  size: number | undefined;
  /** The sha256 of an LFS file's bytes: its blob name in the cache and what its download must hash to. */
  sha256: string | undefined;
  /** The git blob id (sha1 of `blob <size>\0<bytes>`): a plain file's blob name and check. */
  blobId: string | undefined;
}

export interface RevisionInfo {
  /** The commit the revision resolves to. */
  commit: string;
  files: RepoFile[];
}

interface Sibling {
  rfilename?: unknown;
  size?: unknown;
  blobId?: unknown;
  lfs?: { sha256?: unknown; size?: unknown } | null;
}

const MAX_REDIRECTS = 5;

export class HubClient {
  readonly #settings: HubSettings;
  readonly #fetch: typeof fetch;

  constructor(settings: HubSettings, fetchImpl: typeof fetch = fetch) {
    this.#settings = settings;
    this.#fetch = fetchImpl;
  }

  get endpoint(): string {
    return this.#settings.endpoint;
  }

  async revisionInfo(repo: string, revision: string): Promise<RevisionInfo> {
    const url = `${this.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
    const response = await this.#get(url, {}, `${repo}@${revision}`);
    await this.#refuse(response, repo, revision);
    const body = (await response.json().catch(() => undefined)) as
      { sha?: unknown; siblings?: unknown } | undefined;
    if (typeof body?.sha !== 'string' || !Array.isArray(body.siblings))
      throw new HubError(
        `${url} did not answer with a revision's sha and siblings; is ${this.endpoint} a Hub (HF_ENDPOINT)?`,
      );
    const files = (body.siblings as Sibling[])
      .filter((s) => typeof s.rfilename === 'string')
      .map((s): RepoFile => ({
        path: s.rfilename as string,
        size:
          typeof s.lfs?.size === 'number'
            ? s.lfs.size
            : typeof s.size === 'number'
              ? s.size
              : undefined,
        sha256: typeof s.lfs?.sha256 === 'string' ? s.lfs.sha256 : undefined,
        blobId: typeof s.blobId === 'string' ? s.blobId : undefined,
      }));
    return { commit: body.sha, files };
  }

  /**
   * A file's bytes from `offset` on. The answer is 206 when the Hub (or its CDN) honoured the
   * range, 200 when it sent the whole file again.
   */
  async open(
    repo: string,
    commit: string,
    path: string,
    offset: number,
    signal?: AbortSignal,
  ): Promise<Response> {
    const url = `${this.endpoint}/${repo}/resolve/${commit}/${path.split('/').map(encodeURIComponent).join('/')}`;
    const headers: Record<string, string> = offset > 0 ? { Range: `bytes=${offset}-` } : {};
    const response = await this.#get(url, headers, `${repo}/${path}`, signal);
    await this.#refuse(response, repo, commit, path);
    return response;
  }

  /** Follows redirects itself: the Authorization header goes only to the Hub's own origin. */
  async #get(
    url: string,
    headers: Record<string, string>,
    what: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    const origin = new URL(this.endpoint).origin;
    let current = url;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const sameOrigin = new URL(current).origin === origin;
      const token = this.#settings.token;
      let response: Response;
      try {
        response = await this.#fetch(current, {
          headers: {
            ...headers,
            ...(sameOrigin && token !== undefined ? { Authorization: `Bearer ${token}` } : {}),
            'User-Agent': 'hugot-stream',
          },
          redirect: 'manual',
          ...(signal !== undefined ? { signal } : {}),
        });
      } catch (cause) {
        throw new HubError(
          `cannot reach ${new URL(current).origin} for ${what}: ${cause instanceof Error ? cause.message : String(cause)}; check HF_ENDPOINT or the network, or set HF_HUB_OFFLINE=1 to use the cache only`,
          { cause },
          true,
        );
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) return response;
      await response.body?.cancel();
      current = new URL(location, current).href;
    }
    throw new HubError(`more than ${MAX_REDIRECTS} redirects for ${what}`);
  }

  async #refuse(response: Response, repo: string, revision: string, path?: string): Promise<void> {
    if (response.ok) return;
    const code = response.headers.get('x-error-code');
    const detail = (await response.text().catch(() => '')).slice(0, 200).trim();
    const hubSays = detail === '' ? '' : ` (the Hub says: ${detail})`;
    const tokenSet = this.#settings.token !== undefined;
    const { status } = response;
    if (status === 401 && code === 'RepoNotFound')
      throw new HubError(
        `no repository ${repo} on ${this.endpoint}, or it is private${tokenSet ? ' and HF_TOKEN cannot read it' : '; set HF_TOKEN if it is'}; check the name (org/name)${hubSays}`,
        { field: tokenSet ? 'HF_TOKEN' : 'repo' },
      );
    if (status === 401 || status === 403)
      throw new HubError(
        tokenSet
          ? `${repo} refused the token in HF_TOKEN (${status}): the repository is gated or private and this token has no access; accept its conditions on ${this.endpoint}/${repo} or use a token that can read it${hubSays}`
          : `${repo} needs a token (${status}): it is gated or private; set HF_TOKEN to a token that can read it (${this.endpoint}/settings/tokens)${hubSays}`,
        { field: 'HF_TOKEN' },
      );
    if (status === 404) {
      const missing =
        code === 'EntryNotFound' && path !== undefined
          ? `${repo} has no file ${path} at ${revision}`
          : code === 'RevisionNotFound'
            ? `${repo} has no revision '${revision}'; give a branch, tag or commit it has`
            : `no repository ${repo} on ${this.endpoint}; check the name (org/name) and HF_ENDPOINT`;
      throw new HubError(`${missing}${hubSays}`);
    }
    throw new HubError(
      `${this.endpoint} answered ${status} for ${repo}${path === undefined ? '' : `/${path}`}${hubSays}`,
      {},
      status >= 500 || status === 429,
    );
  }
}
