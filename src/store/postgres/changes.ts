import type { ChangeOrigin, ChangeSignals, LeaseChange, WatchOptions } from '../lease-store';
import { ChangeListeners } from '../change-listeners';

/** What the changes ask of their store's session. */
export interface ChangeSession {
  /** Somebody listens: the session opens, and listens. */
  start(): void;
  /** Nobody listens any more: the session may go. */
  unwanted(): void;
  /** Whether notifications are known to reach this process now. */
  readonly hearing: boolean;
}

/**
 * The `changes` capability on PostgreSQL: elections, releases and renewals, announced by the
 * statements that make them (`pg_notify`) and heard on the store's session (`LISTEN`).
 */
export class PostgresChanges implements ChangeSignals {
  private readonly listeners = new ChangeListeners({
    added: () => this.session.start(),
    emptied: () => this.session.unwanted(),
  });

  /** @internal Made by its store. */
  constructor(private readonly session: ChangeSession) {}

  /** @internal Whether anybody listens (the session must). */
  get wanted(): boolean {
    return this.listeners.any;
  }

  /** Releases are reported to every listener; elections and renewals only to those that ask. */
  watch(listener: (origin: ChangeOrigin, change: LeaseChange) => void, options: WatchOptions = {}): () => void {
    return this.listeners.add(listener, options);
  }

  /** Whether notifications are known to reach this process now: it listens, and a probe made the round trip. */
  isWatching(): boolean {
    return this.session.hearing;
  }

  /** @internal A change heard (or, `unheard`, some may have gone unheard). */
  heard(change?: LeaseChange): void {
    this.listeners.notify('anywhere', change);
  }
}
