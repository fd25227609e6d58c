import type { Lease } from '../../core/leadership-event';
import { bestEffort, Eventually } from '../../core/eventually';
import type { ChangeOrigin, ClockReading, HandoffMessage, Handoffs } from '../../store/lease-store';

/** What the aid asks of the campaign it serves. */
export interface HandoffCandidate {
  readonly slot: number;
  readonly holder: string;
  readonly timing: { readonly retryEvery: number };
  reading(): ClockReading;
}

/**
 * Handoffs, as one campaign takes part in them: it hears messages about handoffs of its slot,
 * hands its tenure over when asked, and answers roll-calls while it follows. What a message
 * asks of the campaign (a leader steps aside, a follower tries at once) the campaign does.
 * It keeps its own state and sets no timer.
 */
export class HandoffAid {
  private stopHearing: (() => void) | undefined;

  constructor(
    private readonly handoffs: Handoffs | undefined,
    private readonly campaign: HandoffCandidate,
  ) {}

  /** Hears messages for this candidate, until `stop`. */
  hear(onMessage: (message: HandoffMessage, origin?: ChangeOrigin) => void): void {
    this.stopHearing = this.handoffs?.watchHandoffs(this.campaign.holder, onMessage);
  }

  stop(): void {
    this.stopHearing?.();
    this.stopHearing = undefined;
  }

  /**
   * Ends tenure `own` for `to`: the slot is `to`'s for a window of `retryEvery` (its term is
   * the answer), in which `to` takes it and nobody else may. Without `to`, or with a store
   * that cannot, the lease is released for anybody (`release`).
   */
  handOver(own: Lease, to: string | undefined, release: (lease: Lease) => Eventually<boolean>): Eventually<boolean | number | undefined> {
    const { handoffs, campaign } = this;
    return to === undefined || handoffs === undefined
      ? release(own)
      : handoffs.handOver(own, to, campaign.reading(), campaign.timing.retryEvery);
  }

  /** Says this follower is present, unless the roll-call heard it already: so that a handoff names only candidates that stand, and status can list them. */
  answer(rollCall: Extract<HandoffMessage, { kind: 'roll-call' }>): void {
    const { handoffs, campaign } = this;
    if (rollCall.heard?.includes(campaign.holder)) return;
    const present = { kind: 'present', slot: campaign.slot, to: rollCall.replyTo, holder: campaign.holder } as const;
    bestEffort(() => handoffs?.tell(present));
  }
}
