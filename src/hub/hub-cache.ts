// The Hub's own cache layout, the one Python's huggingface_hub reads and writes, so that either
// side's downloads serve the other:
//   <cacheDir>/models--<org>--<name>/blobs/<sha256 for LFS files, git blob id otherwise>
//   <cacheDir>/models--<org>--<name>/snapshots/<commit>/<path>  -> ../../blobs/<blob> (relative)
//   <cacheDir>/models--<org>--<name>/refs/<revision>            (holds the commit)
// A blob is written as `<blob>.incomplete` first and renamed once its hash is checked, so a
// reader never sees half a file and an interrupted download resumes from what is there.
import {
  lstat,
  mkdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { getRepoFolderName, REGEX_COMMIT_HASH } from '@huggingface/hub';

export const isCommitHash = (revision: string): boolean => REGEX_COMMIT_HASH.test(revision);

export class HubCache {
  readonly cacheDir: string;
  constructor(cacheDir: string) {
    this.cacheDir = cacheDir;
  }

  repoDir(repo: string): string {
    return join(this.cacheDir, getRepoFolderName({ name: repo, type: 'model' }));
  }

  blobPath(repo: string, blob: string): string {
    return join(this.repoDir(repo), 'blobs', blob);
  }

  snapshotDir(repo: string, commit: string): string {
    return join(this.repoDir(repo), 'snapshots', commit);
  }

  /** The commit a branch or tag pointed at when it was last pulled; a commit hash is itself. */
  async commitOf(repo: string, revision: string): Promise<string | undefined> {
    if (isCommitHash(revision)) return revision;
    const text = await readFile(join(this.repoDir(repo), 'refs', revision), 'utf8').catch(
      () => undefined,
    );
    const commit = text?.trim();
    return commit !== undefined && isCommitHash(commit) ? commit : undefined;
  }

  async writeRef(repo: string, revision: string, commit: string): Promise<void> {
    if (revision === commit) return;
    const path = join(this.repoDir(repo), 'refs', revision);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, commit);
  }

  /** The files of `paths` that the snapshot lacks (a dangling link counts as lacking). */
  async missing(repo: string, commit: string, paths: readonly string[]): Promise<string[]> {
    const snapshot = this.snapshotDir(repo, commit);
    const present = await Promise.all(
      paths.map((p) =>
        stat(join(snapshot, p)).then(
          () => true,
          () => false,
        ),
      ),
    );
    return paths.filter((_, i) => present[i] !== true);
  }

  /** A snapshot's file, linked to its blob as Python links it (relative, so the cache can move). */
  async link(repo: string, commit: string, path: string, blob: string): Promise<void> {
    const at = join(this.snapshotDir(repo, commit), path);
    await mkdir(dirname(at), { recursive: true });
    const target = relative(dirname(at), this.blobPath(repo, blob));
    const existing = await readlink(at).catch(() => undefined);
    if (existing === target) return;
    if (existing !== undefined || (await lstat(at).catch(() => undefined)) !== undefined)
      await rm(at, { force: true });
    await symlink(target, at);
  }

  /** Where a blob's download goes until its hash is checked. */
  incompletePath(repo: string, blob: string): string {
    return `${this.blobPath(repo, blob)}.incomplete`;
  }

  async completeBlob(repo: string, blob: string): Promise<void> {
    await rename(this.incompletePath(repo, blob), this.blobPath(repo, blob));
  }

  async hasBlob(repo: string, blob: string): Promise<boolean> {
    return stat(this.blobPath(repo, blob)).then(
      (s) => s.isFile(),
      () => false,
    );
  }
}
