import { randomUUID } from 'node:crypto';

/** A fresh topic / queue / stream name per test, so tests never see each other's records. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
