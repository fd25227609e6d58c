import type { Lease } from '../../core/leadership-event';
import type { ChangeOrigin, ClockReading, HandoffWord, Handoffs } from '../lease-store';
import { HandoffListeners } from '../handoff-listeners';
import { handoffWordOf } from '../handoff-word';

/** What the handoffs ask of their store: its operations, as it runs them. */
export interface HandoffChannel {
  /** Sends a word's text as a notification (it needs no right on the table, only to connect). */
  tell(text: string): Promise<void>;
  /** Writes the slot to `to` for `window` ms if it still holds `lease`; the window's term. */
  handOver(lease: Lease, to: string, window: number): Promise<number | undefined>;
  /** Nobody hears handoffs any more: the session may go. */
  unwanted(): void;
}

/**
 * The `handoffs` capability on PostgreSQL: words are notifications on the store's channel,
 * which every process that listens hears; a handover writes the slot to its successor for a
 * window, with a term of its own.
 */
export class PostgresHandoffs implements Handoffs {
  /** Who hears of handoffs: every candidate of this store, leaders and followers alike, each for its holder. */
  private readonly listeners = new HandoffListeners({ emptied: () => this.channel.unwanted() });

  /** @internal Made by its store. */
  constructor(private readonly channel: HandoffChannel) {}

  /** @internal Whether anybody hears handoffs here (the session must listen). */
  get wanted(): boolean {
    return this.listeners.any;
  }

  tell(word: HandoffWord): Promise<void> {
    return this.channel.tell(JSON.stringify(word));
  }

  /** Writes the slot to `to` for `window` ms if it still holds `lease`, and tells everyone (see the statement). */
  handOver(lease: Lease, to: string, _now: ClockReading, window: number): Promise<number | undefined> {
    return this.channel.handOver(lease, to, window);
  }

  /** Every word addressed to `holder`, for as long as the session listens. Every process hears every word: a notification reaches all. */
  watchHandoffs(holder: string, listener: (word: HandoffWord, origin: ChangeOrigin) => void): () => void {
    // The session is opened by the next operation (a candidate's first comes at once), after
    // the schema's: then both take the same connection of the pool, one after the other.
    return this.listeners.add(listener, holder);
  }

  /** @internal A word heard on the channel. */
  hear(text: string): void {
    const word = handoffWordOf(text);
    if (word !== undefined) this.listeners.deliver(word, 'anywhere');
  }
}
