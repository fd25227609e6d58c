import type { Lease } from '../../core/leadership-event';
import { LeaseRecord, sameTenure, TenureProof, TenureWatch } from '../../store/lease-store';

/** What one follower knows of its leader's tenure by proof: its watch on it, and a tenure whose end was proven. */
export class ProofOfEnd {
  /** While it stands by, and its store can prove a tenure over: its watch on the leader's tenure. */
  watched: { readonly lease: Lease; readonly watch: TenureWatch } | undefined;
  /** A tenure whose end the store proved: attempts may take the slot from it until it changes hands. */
  provenEnded: Lease | undefined;

  /**
   * What an attempt that won `replaced`: the tenure it took, or `undefined` for one whose end
   * was proven, which is no expired lease (no lock-delay for it).
   */
  expiredOf(replaced: LeaseRecord | undefined): LeaseRecord | undefined {
    return replaced !== undefined && !sameTenure(replaced, this.provenEnded) ? replaced : undefined;
  }

  /** An attempt found `lease` in the slot: a proven end counts only while the slot stays with that tenure. */
  found(lease: LeaseRecord): void {
    if (this.provenEnded !== undefined && !sameTenure(lease, this.provenEnded)) this.provenEnded = undefined;
  }
}

/**
 * Proof of a tenure's end, as one campaign takes part in it, where its store gives it
 * (SQLite: a leader on this host whose process is gone): a standby watches the leader's
 * tenure, and a leader says when its belief ended. Without it, followers wait for the lease.
 */
export class TenureProofAid {
  /** Tenures handed over, each proven over only once its successor's window ends (`at`, on the campaign's clock; see `endDue`). */
  private handedOver: Array<{ readonly lease: Lease; readonly at: number }> = [];

  constructor(private readonly proof: TenureProof | undefined) {}

  /** The leader's side: this candidate no longer believes in `lease`, so its followers may prove it over. */
  endTenure(lease: Lease): void {
    this.proof?.endTenure(lease);
  }

  /** `endTenure` once the campaign's clock reaches `at` (see `endDue`), or at `endAllNow`. */
  endTenureAt(lease: Lease, at: number): void {
    this.handedOver.push({ lease, at });
  }

  /** Ends what is due at `now`: the campaign asks at each turn of its timer, which turns at least every `retryEvery` while it sits out. */
  endDue(now: number): void {
    if (this.handedOver.length === 0) return;
    const due = this.handedOver.filter((pending) => pending.at <= now);
    this.handedOver = this.handedOver.filter((pending) => pending.at > now);
    for (const { lease } of due) this.endTenure(lease);
  }

  /** Ends at once what waited (the campaign stopped). */
  endAllNow(): void {
    this.endDue(Infinity);
  }

  /**
   * Watches `tenure` for a follower (`state`), or nothing for `undefined`; `onProof` once its
   * end is proven, unless the follower watches another tenure by then.
   */
  watch(state: ProofOfEnd, tenure: Lease | undefined, onProof: () => void): void {
    const { proof } = this;
    const current = state.watched;
    const wanted = proof !== undefined && tenure !== undefined;
    if (wanted && current !== undefined && sameTenure(tenure, current.lease) && current.watch.watching) return;
    this.unwatch(state);
    if (!wanted) return;
    const watch = proof.watchTenure(tenure, () => {
      if (state.watched?.lease !== tenure) return; // no longer watched
      // Its holder's belief is over: attempts may take the slot from exactly that tenure.
      state.watched = undefined;
      state.provenEnded = tenure;
      onProof();
    });
    state.watched = { lease: tenure, watch };
  }

  unwatch(state: ProofOfEnd): void {
    state.watched?.watch.close();
    state.watched = undefined;
  }
}
