// A local HTTP server that speaks the Hugging Face Hub's endpoints a pull uses, over fixture
// files held in memory: revision info with siblings (`/api/models/<repo>/revision/<rev>`), the
// file tree (`/api/models/<repo>/tree/<rev>`, what Python's snapshot_download lists), and
// `resolve/<rev>/<path>` with the Hub's headers (X-Repo-Commit, ETag, X-Linked-Etag,
// X-Linked-Size) and a 302 to a "CDN" on another host name for LFS files, which honours ranges.
// Faults on demand: a response cut off mid-body, corrupt bytes, a gated repository (401 without a
// token, 403 with the wrong one), 404s with the Hub's X-Error-Code.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';

export interface FixtureRepo {
  /** Repository path -> bytes. */
  files: Map<string, Buffer>;
  /** A token that may read it; without one the repository is public. */
  gatedToken?: string;
  /** Branches and tags besides `main`, each at the one commit this repository has. */
  refs?: string[];
}

interface Stored {
  repo: string;
  commit: string;
  files: Map<string, { bytes: Buffer; blobId: string; sha256: string; lfs: boolean }>;
  gatedToken: string | undefined;
  refs: Set<string>;
}

export type CutKind = 'short' | 'drop';

export interface RequestSeen {
  method: string;
  url: string;
  range: string | undefined;
  authorized: boolean;
  host: string;
  /** The answer carried the file's bytes (not a redirect, not an error). */
  servedBytes: boolean;
}

/** Files stored as LFS on the Hub: the graphs and their external data (plus anything big). */
const isLfs = (path: string, size: number): boolean =>
  /\.onnx(?:_data.*|\.data)?$/.test(path) || size > 10 * 1024 * 1024;

const gitBlobId = (bytes: Buffer): string =>
  createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

export class HubServer {
  readonly #server: Server;
  readonly #repos = new Map<string, Stored>();
  readonly #cuts = new Map<string, { times: number; atByte: number; how: CutKind }>();
  readonly #corrupt = new Set<string>();
  /** Every request, in order. */
  readonly requests: RequestSeen[] = [];
  #port = 0;
  readonly #seen = new WeakMap<IncomingMessage, RequestSeen>();
  #inFlight = 0;
  #maxInFlight = 0;
  #gate:
    | { count: number; giveUpMs: number; waiting: (() => void)[]; timer?: NodeJS.Timeout }
    | undefined;

  private constructor() {
    this.#server = createServer((req, res) => {
      try {
        this.#handle(req, res);
      } catch (err) {
        res.statusCode = 500;
        res.end(String(err));
      }
    });
  }

  static async start(): Promise<HubServer> {
    const hub = new HubServer();
    await new Promise<void>((resolve) => hub.#server.listen(0, '127.0.0.1', resolve));
    hub.#port = (hub.#server.address() as AddressInfo).port;
    return hub;
  }

  /** The Hub's address, what HF_ENDPOINT is set to. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** LFS downloads are redirected here: the same server under another host name, like a CDN. */
  get cdn(): string {
    return `http://localhost:${this.#port}`;
  }

  /** Adds (or replaces) a repository; returns its commit, derived from its content. */
  addRepo(repo: string, fixture: FixtureRepo): string {
    const files = new Map<
      string,
      { bytes: Buffer; blobId: string; sha256: string; lfs: boolean }
    >();
    const commitHash = createHash('sha1').update(repo);
    for (const [path, bytes] of [...fixture.files].sort(([a], [b]) => a.localeCompare(b))) {
      const blobId = gitBlobId(bytes);
      files.set(path, { bytes, blobId, sha256: sha256(bytes), lfs: isLfs(path, bytes.length) });
      commitHash.update(`${path}\0${blobId}\0`);
    }
    const commit = commitHash.digest('hex');
    this.#repos.set(repo, {
      repo,
      commit,
      files,
      gatedToken: fixture.gatedToken,
      refs: new Set(['main', ...(fixture.refs ?? [])]),
    });
    return commit;
  }

  commitOf(repo: string): string {
    const stored = this.#repos.get(repo);
    if (stored === undefined) throw new Error(`no fixture repository ${repo}`);
    return stored.commit;
  }

  /**
   * The next `times` downloads of `path` stop after byte `atByte` of the file. `short`: the body
   * ends cleanly there (chunked, no length promised), so the client holds exactly those bytes;
   * `drop`: the connection is destroyed under a promised length, as a network failure does (the
   * client keeps what it had read by then, which may be less).
   */
  cutDownloads(path: string, times: number, atByte: number, how: CutKind = 'short'): void {
    this.#cuts.set(path, { times, atByte, how });
  }

  /** Downloads of `path` serve other bytes than the ones the Hub lists (a bad mirror, a bit flip). */
  corrupt(path: string, on = true): void {
    if (on) this.#corrupt.add(path);
    else this.#corrupt.delete(path);
  }

  /** The requests that fetched `path`'s bytes (from the CDN or straight from resolve). */
  downloadsOf(path: string): RequestSeen[] {
    return this.requests.filter(
      (r) => r.servedBytes && decodeURIComponent(r.url).endsWith(`/${path}`),
    );
  }

  /**
   * Holds every byte response until `count` are open at once (so a client that fetches one file
   * at a time is seen to), giving up after `giveUpMs` so that such a client is measured, not hung.
   */
  holdUntilParallel(count: number, giveUpMs: number): void {
    this.#gate = { count, giveUpMs, waiting: [] };
  }

  /** The most byte responses that were open at once. */
  get maxInFlight(): number {
    return this.#maxInFlight;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.endpoint);
    const auth = req.headers.authorization;
    const seen: RequestSeen = {
      method: req.method ?? 'GET',
      url: url.pathname,
      range: req.headers.range,
      authorized: auth !== undefined,
      host: req.headers.host ?? '',
      servedBytes: false,
    };
    this.requests.push(seen);
    this.#seen.set(req, seen);
    const path = decodeURIComponent(url.pathname);
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)$/.exec(path);
    if (api !== null)
      return this.#api(res, api[1] as string, api[2] as string, api[3] as string, auth);
    const cdn = /^\/cdn\/([^/]+\/[^/]+)\/([0-9a-f]{40})\/(.+)$/.exec(path);
    if (cdn !== null)
      return this.#serveBytes(req, res, this.#repos.get(cdn[1] as string), cdn[3] as string);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve !== null)
      return this.#resolve(
        req,
        res,
        resolve[1] as string,
        resolve[2] as string,
        resolve[3] as string,
        auth,
      );
    this.#error(res, 404, 'RepoNotFound', 'Repository not found');
  }

  #error(res: ServerResponse, status: number, code: string, message: string): void {
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'X-Error-Code': code,
      'X-Error-Message': message,
    });
    res.end(JSON.stringify({ error: message }));
  }

  /** The repository and commit a request may see, or undefined once an error is answered. */
  #access(
    res: ServerResponse,
    repo: string,
    revision: string,
    auth: string | undefined,
  ): Stored | undefined {
    const stored = this.#repos.get(repo);
    if (stored === undefined) {
      this.#error(res, 404, 'RepoNotFound', 'Repository not found');
      return undefined;
    }
    if (stored.gatedToken !== undefined && auth !== `Bearer ${stored.gatedToken}`) {
      if (auth === undefined)
        this.#error(
          res,
          401,
          'GatedRepo',
          `Access to model ${repo} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
        );
      else
        this.#error(
          res,
          403,
          'GatedRepo',
          `Access to model ${repo} is restricted and you are not in the authorized list.`,
        );
      return undefined;
    }
    if (revision !== stored.commit && !stored.refs.has(revision)) {
      this.#error(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
      return undefined;
    }
    return stored;
  }

  #api(
    res: ServerResponse,
    repo: string,
    kind: string,
    revision: string,
    auth: string | undefined,
  ): void {
    const stored = this.#access(res, repo, revision, auth);
    if (stored === undefined) return;
    const entries = [...stored.files].map(([path, f]) => ({ path, ...f }));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (kind === 'tree') {
      res.end(
        JSON.stringify(
          entries.map((f) => ({
            type: 'file',
            oid: f.blobId,
            size: f.lfs ? f.bytes.length : f.bytes.length,
            path: f.path,
            ...(f.lfs ? { lfs: { oid: f.sha256, size: f.bytes.length, pointerSize: 134 } } : {}),
          })),
        ),
      );
      return;
    }
    res.end(
      JSON.stringify({
        _id: createHash('md5').update(repo).digest('hex').slice(0, 24),
        id: repo,
        modelId: repo,
        private: false,
        gated: stored.gatedToken === undefined ? false : 'manual',
        sha: stored.commit,
        siblings: entries.map((f) => ({
          rfilename: f.path,
          blobId: f.blobId,
          size: f.bytes.length,
          ...(f.lfs ? { lfs: { sha256: f.sha256, size: f.bytes.length, pointerSize: 134 } } : {}),
        })),
      }),
    );
  }

  #resolve(
    req: IncomingMessage,
    res: ServerResponse,
    repo: string,
    revision: string,
    path: string,
    auth: string | undefined,
  ): void {
    const stored = this.#access(res, repo, revision, auth);
    if (stored === undefined) return;
    const file = stored.files.get(path);
    if (file === undefined) {
      this.#error(res, 404, 'EntryNotFound', `${path} does not exist on "${revision}"`);
      return;
    }
    res.setHeader('X-Repo-Commit', stored.commit);
    if (file.lfs) {
      res.writeHead(302, {
        Location: `${this.cdn}/cdn/${repo}/${stored.commit}/${path}`,
        ETag: `"${file.sha256}"`,
        'X-Linked-Etag': `"${file.sha256}"`,
        'X-Linked-Size': String(file.bytes.length),
        'Content-Length': '0',
      });
      res.end();
      return;
    }
    res.setHeader('ETag', `"${file.blobId}"`);
    this.#serveBytes(req, res, stored, path);
  }

  /** The bytes, honouring `Range: bytes=<from>-[<to>]`, with the faults asked for. */
  #serveBytes(
    req: IncomingMessage,
    res: ServerResponse,
    stored: Stored | undefined,
    path: string,
  ): void {
    const file = stored?.files.get(path);
    if (file === undefined) {
      this.#error(res, 404, 'EntryNotFound', 'no such object');
      return;
    }
    let bytes = file.bytes;
    if (this.#corrupt.has(path)) {
      bytes = Buffer.from(bytes);
      bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0xff;
    }
    const total = bytes.length;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let start = 0;
    let end = total - 1;
    if (range !== null) {
      start = Number(range[1]);
      end = range[2] === '' ? total - 1 : Math.min(Number(range[2]), total - 1);
      if (start >= total) {
        res.writeHead(416, { 'Content-Range': `bytes */${total}` });
        res.end();
        return;
      }
    }
    const body = bytes.subarray(start, end + 1);
    const cut = this.#cuts.get(path);
    const short = cut !== undefined && cut.times > 0 && cut.how === 'short';
    res.writeHead(range === null ? 200 : 206, {
      ...(short ? {} : { 'Content-Length': String(body.length) }),
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
      ...(range === null ? {} : { 'Content-Range': `bytes ${start}-${end}/${total}` }),
      ...(file.lfs ? { ETag: `"${file.sha256}"` } : {}),
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const seen = this.#seen.get(req);
    if (seen !== undefined) seen.servedBytes = true;
    this.#inFlight += 1;
    this.#maxInFlight = Math.max(this.#maxInFlight, this.#inFlight);
    res.on('close', () => {
      this.#inFlight -= 1;
    });
    const gate = this.#gate;
    if (gate !== undefined && this.#inFlight < gate.count) {
      gate.waiting.push(() => this.#sendBody(res, path, start, body));
      gate.timer ??= setTimeout(() => this.#openGate(), gate.giveUpMs);
      return;
    }
    if (gate !== undefined) this.#openGate();
    this.#sendBody(res, path, start, body);
  }

  #openGate(): void {
    const gate = this.#gate;
    if (gate === undefined) return;
    this.#gate = undefined;
    clearTimeout(gate.timer);
    for (const release of gate.waiting) release();
  }

  #sendBody(res: ServerResponse, path: string, start: number, body: Buffer): void {
    const cut = this.#cuts.get(path);
    if (cut !== undefined && cut.times > 0) {
      cut.times -= 1;
      const part = body.subarray(0, Math.max(0, cut.atByte - start));
      if (cut.how === 'short') res.end(part);
      else res.write(part, () => res.destroy());
      return;
    }
    res.end(body);
  }
}

/** The files under a folder, as a repository holds them (sub-folders kept), each under `prefix`. */
export async function filesOf(
  folder: string,
  rename: (path: string) => string | undefined = (p) => p,
): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = relative(folder, join(entry.parentPath, entry.name)).split('\\').join('/');
    const as = rename(path);
    if (as !== undefined) files.set(as, await readFile(join(folder, path)));
  }
  return files;
}
