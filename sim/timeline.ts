/**
 * The simulator's one timeline: true time, and every event of every simulated process on it,
 * run one at a time in the order of their time (then of their scheduling), so that a seed
 * alone decides what happens. Each process has a scheduler (`SimScheduler`) whose timers are
 * events here, on its host's monotonic clock, with a wall clock of its own that may step.
 */
import { SchedulerAction, Subscription } from 'rxjs';
import type { ClockedScheduler, ClockReading } from '../src/core/monotonic-scheduler';

/** An event due at `at` (true ms), run unless cancelled, or held while its process is paused. */
interface Due {
  at: number;
  seq: number;
  readonly run: () => void;
  readonly owner: SimProcessClock | undefined;
  cancelled: boolean;
}

/** What the timeline needs of a process: whether it runs, and where its events wait while it is paused. */
export interface SimProcessClock {
  readonly alive: boolean;
  readonly paused: boolean;
  readonly held: Due[];
}

export class Timeline {
  /** True time, ms from the start of the run. */
  now = 0;
  /** The process whose event runs now, if any. */
  running: SimProcessClock | undefined;
  /**
   * Set for an exhaustive search: which of the processes whose events are due at one
   * instant runs first (each process's own events keep their order, as a real one's timers do).
   */
  choose: ((count: number) => number) | undefined;
  private readonly queue: Due[] = [];
  private seq = 0;

  constructor(
    /** What an event that throws does (the simulator records it); by default, the throw goes on. */
    private readonly onThrow: (error: unknown, owner: SimProcessClock | undefined) => void = (error) => {
      throw error;
    },
  ) {}

  /** Runs `run` `delay` ms from now (for `owner`'s process, if any: not while it is paused, never once it is dead). */
  at(delay: number, run: () => void, owner?: SimProcessClock): Due {
    const due: Due = { at: this.now + Math.max(0, delay), seq: this.seq++, run, owner, cancelled: false };
    this.push(due);
    return due;
  }

  cancel(due: Due): void {
    due.cancelled = true;
  }

  /**
   * What a process paused meanwhile had due runs at its resumption, in the order it was due.
   * Each event stays the one its timer holds, so that a timer unsubscribed after the
   * resumption, before its event ran (by an earlier one's work), never fires: a copy, which
   * no cancellation reached, once fired a leader's renewal timer after its campaign had
   * stopped, in place of the withdrawal it was waiting for.
   */
  resume(owner: SimProcessClock): void {
    for (const due of owner.held.splice(0)) {
      if (due.cancelled) continue;
      due.at = this.now;
      due.seq = this.seq++;
      this.push(due);
    }
  }

  /** Runs every event due up to `until`, in order; the time is then `until`. */
  runUntil(until: number): void {
    while (this.step(until)) this.running = undefined;
    this.now = until;
  }

  /**
   * The same, for code that goes on in promises (the PostgreSQL store's): after each event,
   * `settle()` lets what it started run to its end (its process still the one running),
   * before the next event.
   */
  async runUntilSettled(until: number, settle: () => Promise<void>): Promise<void> {
    while (this.step(until)) {
      await settle();
      this.running = undefined;
    }
    this.now = until;
  }

  /** Runs the next event due by `until`, if any (`false` if none), leaving its process as the one `running`. */
  private step(until: number): boolean {
    const first = this.queue[0];
    if (first === undefined || first.at > until) return false;
    let next: Due | undefined = first;
    if (this.choose === undefined) this.pop();
    else if ((next = this.chosen()) === undefined) return true;
    if (next.cancelled) return true;
    this.now = next.at;
    const { owner } = next;
    if (owner !== undefined && !owner.alive) return true;
    if (owner?.paused) {
      owner.held.push(next);
      return true;
    }
    this.running = owner;
    try {
      next.run();
    } catch (error) {
      // Out of a timer in a real process: an uncaught exception, which ends the host.
      this.onThrow(error, owner);
    }
    return true;
  }

  /**
   * Of the events due at the first instant, the first of each process (and each event of
   * none): the one `choose` picks, the others left where they were. Events that cannot run
   * (cancelled, of a dead process) are dropped first, and those of a paused one held, so that
   * only real alternatives count; `undefined` if none was left.
   */
  private chosen(): Due | undefined {
    const at = this.queue[0].at;
    const due: Due[] = [];
    while (this.queue.length > 0 && this.queue[0].at === at) {
      const next = this.queue[0];
      this.pop();
      if (next.cancelled || (next.owner !== undefined && !next.owner.alive)) continue;
      if (next.owner?.paused) next.owner.held.push(next);
      else due.push(next);
    }
    const heads = due.filter(
      (event, index) => event.owner === undefined || due.findIndex((other) => other.owner === event.owner) === index,
    );
    if (heads.length === 0) return undefined;
    const picked = heads[(this.choose as (count: number) => number)(heads.length)];
    for (const event of due) if (event !== picked) this.push(event);
    return picked;
  }

  private push(due: Due): void {
    const queue = this.queue;
    queue.push(due);
    let i = queue.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(queue[i], queue[parent])) break;
      [queue[i], queue[parent]] = [queue[parent], queue[i]];
      i = parent;
    }
  }

  private pop(): void {
    const queue = this.queue;
    const last = queue.pop() as Due;
    if (queue.length === 0) return;
    queue[0] = last;
    let i = 0;
    for (;;) {
      const [left, right] = [2 * i + 1, 2 * i + 2];
      let least = i;
      if (left < queue.length && before(queue[left], queue[least])) least = left;
      if (right < queue.length && before(queue[right], queue[least])) least = right;
      if (least === i) return;
      [queue[i], queue[least]] = [queue[least], queue[i]];
      i = least;
    }
  }
}

function before(a: Due, b: Due): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** A host: its monotonic clock, which all its processes share, is true time shifted by `offset`. */
export interface SimHost {
  readonly name: string;
  readonly offset: number;
}

/**
 * A process's scheduler: timers on the timeline, `now()` on its host's monotonic clock, and
 * `readClocks()` with its own wall clock (Unix ms, which `wallOffset` steps). A timer fires
 * `lateness()` ms after it is due: later, as a busy event loop's do, or earlier (negative),
 * as Node.js's can, never before it was set.
 */
export class SimScheduler implements ClockedScheduler {
  constructor(
    private readonly timeline: Timeline,
    private readonly host: SimHost,
    private readonly process: SimProcessClock & { wallOffset: number },
    private readonly lateness: () => number,
  ) {}

  now(): number {
    return this.timeline.now + this.host.offset;
  }

  readClocks(): ClockReading {
    return { clock: this.host.name, now: this.now(), wall: wallEpoch + this.timeline.now + this.process.wallOffset };
  }

  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
    return new SimAction(this.timeline, this.process, work, this.lateness).schedule(state, delay);
  }
}

/** Where the simulated wall clocks start: a Unix time, so that the SQL sees plausible ms. */
export const wallEpoch = 1_800_000_000_000;

class SimAction<T> extends Subscription implements SchedulerAction<T> {
  private due: Due | undefined;

  constructor(
    private readonly timeline: Timeline,
    private readonly owner: SimProcessClock,
    private readonly work: (this: SchedulerAction<T>, state?: T) => void,
    private readonly lateness: () => number,
  ) {
    super(() => {
      if (this.due) timeline.cancel(this.due);
      this.due = undefined;
    });
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    if (this.due) this.timeline.cancel(this.due);
    const due = this.timeline.at(
      Math.max(0, delay + this.lateness()),
      () => {
        this.due = undefined;
        this.work.call(this, state);
        if (this.due === undefined) this.unsubscribe(); // not scheduled again: done
      },
      this.owner,
    );
    this.due = due;
    return this;
  }
}
