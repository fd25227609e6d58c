import { addresseeOf } from './handoff-word';
import { Listeners } from './listeners';
import { everybody, type ChangeOrigin, type HandoffWord } from './lease-store';

/** The listeners of a store's `watchHandoffs` (see {@link Listeners}), each for one holder: a word reaches those of its addressee only. */
export class HandoffListeners extends Listeners<string, [HandoffWord, ChangeOrigin]> {
  /** Tells `word`, which came from `origin`, to the listeners of its addressee (to all, for {@link everybody}). */
  deliver(word: HandoffWord, origin: ChangeOrigin): void {
    const addressee = addresseeOf(word);
    this.tell([word, origin], (holder) => addressee === everybody || holder === addressee);
  }
}
