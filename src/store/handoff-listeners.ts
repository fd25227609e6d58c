import { addresseeOf } from './handoff-word';
import { everybody, type ChangeOrigin, type HandoffWord } from './lease-store';

type Listener = (word: HandoffWord, origin: ChangeOrigin) => void;

/**
 * The listeners of a store's `watchHandoffs`, each for one holder: a word reaches those of
 * its addressee only. The store starts hearing (a file watch, a `LISTEN`) when the first
 * comes and may stop when the last goes (`onEmpty`).
 */
export class HandoffListeners {
  private readonly listeners = new Map<Listener, string>();

  constructor(private readonly onEmpty: () => void = () => undefined) {}

  /** Adds `listener` for `holder`'s words, and returns the way to remove it. */
  add(holder: string, listener: Listener): () => void {
    // A function added twice is two listeners: wrapping keeps them apart.
    const own: Listener = (word, origin) => listener(word, origin);
    this.listeners.set(own, holder);
    return () => {
      if (this.listeners.delete(own) && this.listeners.size === 0) this.onEmpty();
    };
  }

  get any(): boolean {
    return this.listeners.size > 0;
  }

  /** Tells `word`, which came from `origin`, to the listeners of its addressee (to all, for {@link everybody}). */
  deliver(word: HandoffWord, origin: ChangeOrigin): void {
    const addressee = addresseeOf(word);
    for (const [listener, holder] of [...this.listeners]) if (addressee === everybody || holder === addressee) listener(word, origin);
  }
}
