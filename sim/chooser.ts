/**
 * The choices of an exhaustive search (`npm run simulate -- --exhaustive`): where a run could
 * go more than one way (which of the processes whose events are due at one instant runs
 * first; whether an operation answers at once, a millisecond later, or a lease late), the
 * chooser takes the choice its prefix says, or the first, and remembers how many there
 * were, so that a depth-first search can run every other way next. Only within the
 * horizon: after it, a run goes the first way everywhere.
 */
export interface Choice {
  chosen: number;
  of: number;
}

export class Chooser {
  readonly made: Choice[] = [];
  private delaysLeft: number;

  constructor(
    private readonly prefix: readonly number[],
    /** How many operations may answer late in one run. */
    delays: number,
    /** True ms until which choices are made. */
    private readonly horizon: number,
    private readonly now: () => number,
  ) {
    this.delaysLeft = delays;
  }

  /** One of `of` ways (0 to of - 1). */
  choose(of: number): number {
    if (of <= 1 || this.now() > this.horizon) return 0;
    const chosen = this.made.length < this.prefix.length ? this.prefix[this.made.length] : 0;
    this.made.push({ chosen, of });
    return chosen;
  }

  /** How an operation answers: at once (0), its statement and its answer a ms each later (1), its answer a lease late (2). */
  latency(): 0 | 1 | 2 {
    if (this.delaysLeft === 0) return 0;
    const chosen = this.choose(3) as 0 | 1 | 2;
    if (chosen > 0) this.delaysLeft--;
    return chosen;
  }
}
