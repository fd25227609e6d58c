import { ChangeOrigin, WatchOptions } from './lease-store';

/**
 * The listeners of a store's `watch`: the store starts its watch (a file watch, a `LISTEN`)
 * when the first one comes and stops it when the last one goes, and tells them of a change.
 */
export class ChangeListeners {
  /** Each listener, with whether it also wants to hear of elections. */
  private readonly listeners = new Map<(origin: ChangeOrigin) => void, boolean>();

  constructor(
    private readonly startWatching: () => void,
    private readonly stopWatching: () => void,
  ) {}

  /** Adds `listener`, and returns the way to remove it. */
  add(listener: (origin: ChangeOrigin) => void, { elections = false }: WatchOptions = {}): () => void {
    // A function added twice is two listeners: wrapping keeps them apart.
    const own = (origin: ChangeOrigin) => listener(origin);
    this.listeners.set(own, elections);
    this.startWatching();
    return () => {
      if (!this.listeners.delete(own)) return;
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  get any(): boolean {
    return this.listeners.size > 0;
  }

  /**
   * Tells the listeners of a change: `'release'` (or any change, where the store cannot tell)
   * reaches them all; `'election'` only those that asked for elections.
   */
  notify(origin: ChangeOrigin, change: 'release' | 'election' = 'release'): void {
    for (const [listener, elections] of [...this.listeners]) if (change === 'release' || elections) listener(origin);
  }
}
