// Stop sequences are matched on the decoded text, not on token ids, because a sequence can start
// in the middle of one token and end in another. Text that might still turn into a stop sequence
// (or an incomplete UTF-8 character) is held back from a stream until the next token settles it.

export interface StopMatch {
  /** Where the earliest stop sequence starts in the text. */
  index: number;
  stop: string;
}

export class StopSequences {
  private readonly stops: readonly string[];

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  find(text: string): StopMatch | undefined {
    let best: StopMatch | undefined;
    for (const stop of this.stops) {
      const index = text.indexOf(stop);
      if (index >= 0 && (best === undefined || index < best.index)) best = { index, stop };
    }
    return best;
  }

  /** How much of the text can be shown now: up to any tail that may begin a stop sequence. */
  settledLength(text: string): number {
    let tail = text.length;
    // The tokenizer writes U+FFFD for the bytes of a character still being spelled out.
    while (tail > 0 && text.charCodeAt(tail - 1) === 0xfffd) tail -= 1;
    let end = tail;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, tail); n > 0; n -= 1) {
        if (text.endsWith(stop.slice(0, n), tail)) {
          end = Math.min(end, tail - n);
          break;
        }
      }
    }
    return end;
  }
}
