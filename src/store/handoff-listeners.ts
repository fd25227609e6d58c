import { addresseeOf } from './handoff-message';
import { Listeners } from './listeners';
import { everybody, type ChangeOrigin, type HandoffMessage } from './lease-store';

/** The listeners of a store's `watchHandoffs` (see {@link Listeners}), each for one holder: a message reaches those of its addressee only. */
export class HandoffListeners extends Listeners<string, [HandoffMessage, ChangeOrigin]> {
  /** Tells `message`, which came from `origin`, to the listeners of its addressee (to all, for {@link everybody}). */
  deliver(message: HandoffMessage, origin: ChangeOrigin): void {
    const addressee = addresseeOf(message);
    this.tell([message, origin], (holder) => addressee === everybody || holder === addressee);
  }
}
