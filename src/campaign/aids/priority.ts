import { bestEffort, isPromiseLike, valueNow } from '../../core/eventually';
import type { ClockReading, Priorities } from '../../store/lease-store';

/** What the aid asks of the campaign it serves. */
export interface PriorityCandidate {
  readonly slot: number;
  readonly holder: string;
  readonly timing: { readonly priority?: number; readonly preempt?: boolean; readonly expiresAfter: number; readonly retryEvery: number };
  now(): number;
  reading(): ClockReading;
}

/**
 * What one follower knows for putting its attempts off for a candidate of a higher priority
 * (see `PriorityAid.putOffFor`). A new follower knows nothing: it may find the slot free.
 */
export class Deferral {
  /**
   * What holds for the attempt due now: it was put off once already (`put-off`), it must not
   * be put off (`named`: a handoff named this follower), or neither (`free`).
   */
  attempt: 'free' | 'put-off' | 'named' = 'free';
  /**
   * Whether the slot may have been freed since this follower last found it held: nothing
   * found yet, or a change other than a renewal heard since.
   */
  mayBeFree = true;
  /** Until when, on the campaign's clock, the lease it last found stands by its count. */
  heldUntil = -Infinity;
  /** The highest priority another candidate declared, as last read, and when. */
  declared: { readonly priority: number; readonly at: number } | undefined;
}

/**
 * Priorities, as one campaign takes part in them: it declares its own (above 0), withdraws it
 * when it leads or stops, and tells its follower when to put an attempt off for a candidate
 * of a higher priority. It keeps its own state and sets no timer.
 */
export class PriorityAid {
  /** When this candidate last declared its priority, on its clock; -Infinity for never (or withdrawn). */
  private declaredAt = -Infinity;

  /** `priorities`: the store's, if it keeps them; without, every candidate is equal. */
  constructor(
    private readonly priorities: Priorities | undefined,
    private readonly campaign: PriorityCandidate,
  ) {}

  /** Whether others let this candidate take a free slot first: it declares a priority above 0 to a store that keeps it. */
  get preferred(): boolean {
    return (this.campaign.timing.priority ?? 0) > 0 && this.priorities !== undefined;
  }

  /**
   * Declares this candidate's priority, if above 0, at its first attempt and again before
   * the declaration runs out (each lasts `expiresAfter`); beside the operation in flight,
   * as a standby place is claimed: best effort, nothing waits for it.
   */
  declare(): void {
    const { campaign } = this;
    const { priority = 0, expiresAfter } = campaign.timing;
    const { priorities } = this;
    const now = campaign.now();
    if (priority <= 0 || priorities === undefined || now - this.declaredAt < expiresAfter / 3) return;
    this.declaredAt = now;
    try {
      const declared = priorities.declare(campaign.slot, campaign.holder, priority, campaign.reading(), expiresAfter);
      if (isPromiseLike(declared)) declared.then(undefined, () => (this.declaredAt = -Infinity));
    } catch {
      this.declaredAt = -Infinity; // again at the next attempt
    }
  }

  /**
   * Withdraws the priority this candidate declared, if it did: best effort, a declaration
   * also runs out by itself. A leader needs no preference while it holds the slot, and one
   * that dies leaves none behind for the others to wait for; it declares again once it follows.
   */
  withdraw(): void {
    const { campaign } = this;
    const { priorities } = this;
    if (priorities === undefined || this.declaredAt === -Infinity) return;
    this.declaredAt = -Infinity;
    bestEffort(() => priorities.declare(campaign.slot, campaign.holder, 0, campaign.reading(), campaign.timing.expiresAfter));
  }

  /**
   * With `preempt`: whether a standing candidate of a higher priority than this leader's
   * declared itself, once this leader has led for `expiresAfter` since `since` (so that the
   * slot changes hands this way at most once a lease, and two candidates never flap).
   */
  outranked(since: number): boolean {
    const { campaign, priorities } = this;
    const { preempt = false, priority = 0, expiresAfter } = campaign.timing;
    if (!preempt || priorities === undefined || campaign.now() - since < expiresAfter) return false;
    try {
      const highest = valueNow(priorities.highest(campaign.slot, campaign.holder, campaign.reading()));
      return highest !== undefined && highest > priority;
    } catch {
      return false; // asked again at the next renewal
    }
  }

  /**
   * The ms by which to put the attempt due now off, or `undefined` to make it: put off by
   * `retryEvery` when a standing candidate of a higher priority declared itself: if the slot
   * is free, that one takes it meanwhile (it listens, and tries at once), and this attempt
   * then finds it taken; if that one is gone, this attempt comes only that much later. Once
   * put off, the attempt is made if the slot may be free by then: a release or a proof
   * heard, or, for a follower that does not hear them (`hears`), the lease last found run
   * out by its count. A slot last found held, with nothing heard since, was not freed for
   * it: trying would only race a release on its way (made at the leader's renewal, as a
   * preempting leader's is) with the candidate it defers to, so it is put off again while
   * that one's declaration stands.
   */
  putOffFor(deferral: Deferral, waitForLock: boolean, hears: boolean): number | undefined {
    const { campaign } = this;
    const { attempt } = deferral;
    deferral.attempt = 'free';
    if (attempt === 'named') return undefined;
    if (attempt === 'put-off') {
      if (deferral.mayBeFree || (!hears && campaign.now() > deferral.heldUntil)) return undefined;
    }
    if (this.highestDeclared(deferral, waitForLock) <= (campaign.timing.priority ?? 0)) return undefined;
    deferral.attempt = 'put-off';
    return campaign.timing.retryEvery;
  }

  /**
   * The highest priority another candidate declared. In a crowd, a store that reads the
   * database for it is asked only while this follower knows of a declaration (SQLite: in a
   * rollback journal, a read by every one of the crowd would keep the one that writes from
   * committing), so that candidates that use no priority pay nothing; a declaration made
   * since is seen at the next attempt made alone (a poll). A store whose answer comes later
   * (a promise) is not waited for: every candidate is equal there, as after an error.
   */
  private highestDeclared(deferral: Deferral, waitForLock: boolean): number {
    const { campaign } = this;
    const { priorities } = this;
    const now = campaign.now();
    const { declared } = deferral;
    const known = declared !== undefined && declared.priority > 0 && now - declared.at < campaign.timing.expiresAfter;
    if (priorities === undefined || (!waitForLock && !known && priorities.answersLocally !== true)) return 0;
    try {
      const highest = valueNow(priorities.highest(campaign.slot, campaign.holder, campaign.reading()));
      deferral.declared = highest === undefined ? undefined : { priority: highest, at: now };
    } catch {
      deferral.declared = undefined; // a lock or an error: the attempt tells
    }
    return deferral.declared?.priority ?? 0;
  }
}
