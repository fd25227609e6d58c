/**
 * Listeners, each with what it wants to hear (`Wants`): what a store's `watch` and
 * `watchHandoffs` keep. The store starts hearing (a file watch, a `LISTEN`) as one comes
 * (`added`) and may stop when the last goes (`emptied`).
 */
export class Listeners<Wants, Heard extends unknown[]> {
  private readonly listeners = new Map<(...heard: Heard) => void, Wants>();

  constructor(private readonly hooks: { added?: () => void; emptied?: () => void } = {}) {}

  /** Adds `listener`, wanting `wants`, and returns the way to remove it. */
  add(listener: (...heard: Heard) => void, wants: Wants): () => void {
    // A function added twice is two listeners: wrapping keeps them apart.
    const own = (...heard: Heard) => listener(...heard);
    this.listeners.set(own, wants);
    this.hooks.added?.();
    return () => {
      if (this.listeners.delete(own) && this.listeners.size === 0) this.hooks.emptied?.();
    };
  }

  get any(): boolean {
    return this.listeners.size > 0;
  }

  /** Tells `heard` to each listener that `wanted` says wants it, in the order they came. */
  protected tell(heard: Heard, wanted: (wants: Wants) => boolean): void {
    for (const [listener, wants] of [...this.listeners]) if (wanted(wants)) listener(...heard);
  }
}
