// One OrtSession per (model file, options) for every thread that holds the same table: a shard
// makes one table and hands it to its inference threads in workerData. The table lives in a
// SharedArrayBuffer; a slot holds the sha-256 of the session's key, how many holders it has and
// the session's address. The first thread to ask creates the session while holding the table's
// lock (the others wait: they would only create the same session), later ones take a share, and
// the last share released frees it. ONNX Runtime's Run is thread-safe, so the holders call it at
// once on the same session.
import { createHash } from 'node:crypto';
import type { Pointer } from './ort-library.ts';

const HEADER_BYTES = 16;
const SLOT_BYTES = 48;
const KEY_WORDS = 8;
/** Distinct sessions one table can hold; a shard loads a handful of graphs. */
export const SHARED_SESSION_SLOTS = 64;

const UNLOCKED = 0;
const LOCKED = 1;

export class SharedSessions {
  readonly buffer: SharedArrayBuffer;
  private readonly words: Int32Array;
  private readonly addresses: BigInt64Array;

  /** A new table's memory, to be handed to every thread that should share sessions. */
  static allocate(slots = SHARED_SESSION_SLOTS): SharedArrayBuffer {
    return new SharedArrayBuffer(HEADER_BYTES + slots * SLOT_BYTES);
  }

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.words = new Int32Array(buffer);
    this.addresses = new BigInt64Array(buffer);
  }

  private get slots(): number {
    return (this.buffer.byteLength - HEADER_BYTES) / SLOT_BYTES;
  }

  /**
   * The session for `key`: a share of the existing one, or the one `create` makes (under the
   * lock; if it throws, nothing is recorded and the next caller tries again).
   */
  acquire(key: string, create: () => Pointer): { address: Pointer; created: boolean } {
    const digest = keyWords(key);
    return this.locked(() => {
      const found = this.find(digest);
      if (found !== undefined) {
        Atomics.add(this.words, refsIndex(found), 1);
        return {
          address: BigInt.asUintN(64, this.addresses[addressIndex(found)] as bigint),
          created: false,
        };
      }
      const free = this.find(undefined);
      if (free === undefined)
        throw new Error(`the shared session table is full (${this.slots} sessions)`);
      const address = create();
      this.words.set(digest, keyIndex(free));
      Atomics.store(this.words, refsIndex(free), 1);
      this.addresses[addressIndex(free)] = BigInt.asIntN(64, address);
      return { address, created: true };
    });
  }

  /** Gives a share back; `destroy` runs (under the lock) when it was the last one. */
  release(key: string, destroy: (address: Pointer) => void): void {
    const digest = keyWords(key);
    this.locked(() => {
      const slot = this.find(digest);
      if (slot === undefined) return;
      if (Atomics.sub(this.words, refsIndex(slot), 1) > 1) return;
      const address = BigInt.asUintN(64, this.addresses[addressIndex(slot)] as bigint);
      this.words.fill(0, keyIndex(slot), keyIndex(slot) + KEY_WORDS);
      this.addresses[addressIndex(slot)] = 0n;
      destroy(address);
    });
  }

  /** Empties the table, passing every session still in it to `destroy` (its holders are gone). */
  releaseAll(destroy: (address: Pointer) => void): number {
    return this.locked(() => {
      let released = 0;
      for (let slot = 0; slot < this.slots; slot += 1) {
        if (Atomics.load(this.words, refsIndex(slot)) === 0) continue;
        const address = BigInt.asUintN(64, this.addresses[addressIndex(slot)] as bigint);
        this.words.fill(0, keyIndex(slot), keyIndex(slot) + KEY_WORDS + 1);
        this.addresses[addressIndex(slot)] = 0n;
        destroy(address);
        released += 1;
      }
      return released;
    });
  }

  /** Sessions in the table. */
  get size(): number {
    let count = 0;
    for (let slot = 0; slot < this.slots; slot += 1)
      if (Atomics.load(this.words, refsIndex(slot)) > 0) count += 1;
    return count;
  }

  /** Holders of `key`'s session (0 when there is none). */
  holders(key: string): number {
    const slot = this.find(keyWords(key));
    return slot === undefined ? 0 : Atomics.load(this.words, refsIndex(slot));
  }

  private find(digest: Int32Array | undefined): number | undefined {
    for (let slot = 0; slot < this.slots; slot += 1) {
      const refs = Atomics.load(this.words, refsIndex(slot));
      if (digest === undefined) {
        if (refs === 0) return slot;
        continue;
      }
      if (refs === 0) continue;
      const base = keyIndex(slot);
      let same = true;
      for (let i = 0; i < KEY_WORDS && same; i += 1) same = this.words[base + i] === digest[i];
      if (same) return slot;
    }
    return undefined;
  }

  private locked<T>(body: () => T): T {
    while (Atomics.compareExchange(this.words, 0, UNLOCKED, LOCKED) !== UNLOCKED)
      Atomics.wait(this.words, 0, LOCKED, 100);
    try {
      return body();
    } finally {
      Atomics.store(this.words, 0, UNLOCKED);
      Atomics.notify(this.words, 0, 1);
    }
  }
}

function keyWords(key: string): Int32Array {
  // A copy: a Buffer from the pool may start at an offset an Int32Array cannot.
  return new Int32Array(Uint8Array.from(createHash('sha256').update(key).digest()).buffer);
}

const keyIndex = (slot: number): number => (HEADER_BYTES + slot * SLOT_BYTES) / 4;
const refsIndex = (slot: number): number => keyIndex(slot) + KEY_WORDS;
const addressIndex = (slot: number): number => (HEADER_BYTES + slot * SLOT_BYTES + 40) / 8;
