// Writes results in input order although they complete out of order: each record takes a ticket
// when it arrives, and its write runs once every earlier ticket's write has run.
export class InOrderWriter {
  private nextTicket = 0;
  private nextToWrite = 0;
  private readonly ready = new Map<
    number,
    { write: () => Promise<void>; done: (err?: Error) => void }
  >();
  private writing = false;

  ticket(): number {
    return this.nextTicket++;
  }

  /** Resolves when this ticket's write has happened (after all earlier ones). */
  complete(ticket: number, write: () => Promise<void>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ready.set(ticket, {
        write,
        done: (err) => (err === undefined ? resolve() : reject(err)),
      });
      void this.flush();
    });
  }

  /** The ticket's record will not be written (it failed before its write): later ones go on. */
  skip(ticket: number): void {
    this.ready.set(ticket, { write: () => Promise.resolve(), done: () => undefined });
    void this.flush();
  }

  get pending(): number {
    return this.nextTicket - this.nextToWrite;
  }

  private async flush(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      for (
        let entry = this.ready.get(this.nextToWrite);
        entry !== undefined;
        entry = this.ready.get(this.nextToWrite)
      ) {
        this.ready.delete(this.nextToWrite);
        this.nextToWrite += 1;
        try {
          await entry.write();
          entry.done();
        } catch (err) {
          entry.done(err instanceof Error ? err : new Error(String(err)));
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
