import { ChangeOrigin } from './lease-store';

/**
 * The listeners of a store's `watch`: the store starts its watch (a file watch, a `LISTEN`)
 * when the first one comes and stops it when the last one goes, and tells them all of a
 * change.
 */
export class ChangeListeners {
  private readonly listeners = new Set<(origin: ChangeOrigin) => void>();

  constructor(
    private readonly startWatching: () => void,
    private readonly stopWatching: () => void,
  ) {}

  /** Adds `listener`, and returns the way to remove it. */
  add(listener: (origin: ChangeOrigin) => void): () => void {
    this.listeners.add(listener);
    this.startWatching();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  get any(): boolean {
    return this.listeners.size > 0;
  }

  notify(origin: ChangeOrigin): void {
    for (const listener of [...this.listeners]) listener(origin);
  }
}
