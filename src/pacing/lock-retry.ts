import { LockTaken } from '../store/lease-store';

/** The widest spread of one step, in ms: about 30 tries a second while a lock stays taken. */
const widestStep = 32;

/**
 * When to try again an operation that found its lock taken (`LockTaken`), which a store
 * reports at once instead of waiting with the host's event loop stopped. Locks that the
 * library meets are mostly held for well under a millisecond (another candidate's read or
 * compare-and-set), sometimes for a few ms (a commit that waits for the disk, an
 * application's transaction): steps start at 1 or 2 ms and double to at most `widestStep`,
 * each drawn at random within its width, so that a crowd woken at the same moment does not
 * try again in lockstep. One episode lasts from the first lock met to the next operation
 * that gets through (`clear`).
 */
export class LockRetry {
  private since: number | undefined;
  private tries = 0;

  constructor(private readonly random: () => number = Math.random) {}

  /** Ms until the next try, for a lock met at `now`; starts an episode if none is on. */
  next(now: number): number {
    this.since ??= now;
    const width = Math.min(2 ** (this.tries + 1), widestStep);
    this.tries += 1;
    return 1 + Math.floor(this.random() * width);
  }

  /**
   * `next(now)`, while the episode has lasted less than `budget` ms at `now`; `undefined`
   * once it has, which ends the episode: the caller stops trying on short steps.
   */
  nextWithin(now: number, budget: number): number | undefined {
    if (this.lockedFor(now) < budget) return this.next(now);
    this.clear();
    return undefined;
  }

  /**
   * What every caller does with an operation's error: for a lock met (`LockTaken`), the ms
   * until the next try while the episode has lasted less than `budget` (`nextWithin`); for
   * a lock held longer, or any other error, `undefined`, and the episode is over. Each
   * caller keeps its own way to wait that long.
   */
  stepAfter(error: unknown, now: number, budget: number): number | undefined {
    if (error instanceof LockTaken) return this.nextWithin(now, budget);
    this.clear();
    return undefined;
  }

  /** Ms since the episode's first lock met, at `now`; 0 when none is on. */
  lockedFor(now: number): number {
    return this.since === undefined ? 0 : now - this.since;
  }

  /** Starts the count again from `now`, as after a report of the episode. */
  restart(now: number): void {
    this.since = now;
  }

  /** The operation got through: the episode is over. */
  clear(): void {
    this.since = undefined;
    this.tries = 0;
  }
}
