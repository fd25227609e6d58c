import { Listeners } from './listeners';
import { ChangeOrigin, LeaseChange, WatchOptions } from './lease-store';

/** The listeners of a store's `watch` (see {@link Listeners}), each with what it wants to hear of besides releases. */
export class ChangeListeners extends Listeners<WatchOptions, [ChangeOrigin, LeaseChange]> {
  /**
   * Tells the listeners of a change: `'release'` (or any change, where the store cannot tell)
   * and `'unheard'` reach them all; `'election'` and `'renewal'` only those that asked for them.
   */
  notify(origin: ChangeOrigin, change: LeaseChange = 'release'): void {
    this.tell(
      [origin, change],
      ({ elections = false, renewals = false }) =>
        change === 'release' || change === 'unheard' || (change === 'election' && elections) || (change === 'renewal' && renewals),
    );
  }
}
