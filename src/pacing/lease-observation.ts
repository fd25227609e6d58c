import { LeaseRecord, LeaseView } from '../store/lease-store';

/**
 * How long a slot's lease has left, as one reader (a follower, an observer) knows it. Most
 * stores say it (`expiresIn`, on a clock that cannot jump). Where a lease was timed by a
 * clock that may step (PostgreSQL's wall clock), the store says instead how long the lease
 * lasts (`observeFor`), and the reader counts that from when it first saw this exact lease
 * (holder, term and expiry: a renewal changes the expiry), on its own monotonic clock. Its
 * holder wrote the lease before the reader saw it, so its belief, counted from when it sent
 * that write, is over by then, whatever any wall clock did: Kubernetes' elector does the
 * same. The cost: a reader that first sees a lease late (it just started, or it heard of a
 * renewal only at its next poll) waits for up to that much longer.
 */
export class LeaseObservation {
  private seen: { readonly lease: LeaseRecord; readonly since: number; readonly observeFor: number } | undefined;

  /**
   * Ms the lease of `view` has left, standing while >= 0, for a view that arrived at `now`
   * (the reader's monotonic clock when the answer came, never when its question was sent:
   * the lease may have been written in between).
   */
  remaining(view: LeaseView, now: number): number {
    const { lease, observeFor } = view;
    if (observeFor === undefined) {
      this.seen = undefined;
      return view.expiresIn;
    }
    if (this.seen === undefined || !isSameLease(this.seen.lease, lease)) this.seen = { lease, since: now, observeFor };
    return this.seen.since + this.seen.observeFor - now;
  }

  /** The lease this reader watched unchanged for its whole length by `now`, if it did: its holder's belief is over. */
  outwaited(now: number): LeaseRecord | undefined {
    const { seen } = this;
    return seen !== undefined && now > seen.since + seen.observeFor ? seen.lease : undefined;
  }

  /** Forgets what was seen: the next view starts a new count. */
  forget(): void {
    this.seen = undefined;
  }
}

function isSameLease(a: LeaseRecord, b: LeaseRecord): boolean {
  return a.holder === b.holder && a.term === b.term && a.expiresAt === b.expiresAt;
}
