import { ChangeOrigin, LeaseChange, WatchOptions } from './lease-store';

type Listener = (origin: ChangeOrigin, change: LeaseChange) => void;

/**
 * The listeners of a store's `watch`: the store starts its watch (a file watch, a `LISTEN`)
 * when the first one comes and stops it when the last one goes, and tells them of a change.
 */
export class ChangeListeners {
  /** Each listener, with what it wants to hear of besides releases. */
  private readonly listeners = new Map<Listener, WatchOptions>();

  constructor(
    private readonly startWatching: () => void,
    private readonly stopWatching: () => void,
  ) {}

  /** Adds `listener`, and returns the way to remove it. */
  add(listener: Listener, options: WatchOptions = {}): () => void {
    // A function added twice is two listeners: wrapping keeps them apart.
    const own: Listener = (origin, change) => listener(origin, change);
    this.listeners.set(own, options);
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
   * and `'unheard'` reach them all; `'election'` and `'renewal'` only those that asked for them.
   */
  notify(origin: ChangeOrigin, change: LeaseChange = 'release'): void {
    for (const [listener, { elections = false, renewals = false }] of [...this.listeners]) {
      const wanted =
        change === 'release' || change === 'unheard' || (change === 'election' && elections) || (change === 'renewal' && renewals);
      if (wanted) listener(origin, change);
    }
  }
}
