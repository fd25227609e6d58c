import { ChaosDatabase } from '../test-kit/chaos-database';
import { FaultRecord } from '../test-kit/history';
import { SteppedClock } from '../test-kit/stepped-clock';
import { sleep, WorkerProcess } from '../test-kit/worker-process';
import { PlannedFault } from './fault-plan';
import { began, ended } from './moments';
import { RunWorkers, Timing } from './run-workers';

/**
 * Injects a run's planned faults, one method per kind, and records each as it happened: when
 * it began and, for those that last, when its effect ended; or why it was skipped.
 */
export class FaultInjector {
  readonly faults: FaultRecord[] = [];
  /** Whether a `lock` fault holds the database's lock now. */
  private lockHeld = false;

  constructor(
    private readonly workers: RunWorkers,
    private readonly db: ChaosDatabase,
    private readonly timing: Timing,
    private readonly clock: SteppedClock | undefined,
  ) {}

  inject(planned: PlannedFault): void {
    const { kind, slot } = planned;
    const leader = this.workers.leaderOf(slot);
    const fault: FaultRecord = { kind, slot, ...began(), pid: leader?.pid, holder: leader?.leading.get(slot) };
    this.faults.push(fault);
    switch (kind) {
      case 'kill':
      case 'stop':
        return leader ? this.end(leader, kind === 'kill' ? 'SIGKILL' : 'SIGTERM') : skip(fault, 'no leader');
      case 'kill-in-fenced':
        return this.killInFenced(fault, leader);
      case 'kill-with-standbys':
        return leader ? this.killWithStandbys(fault, leader) : skip(fault, 'no leader');
      case 'pause':
        return leader ? this.pause(fault, leader, planned.duration) : skip(fault, 'no leader');
      case 'resubscribe':
        return this.resubscribe(fault, leader);
      case 'step-down':
        if (!leader || leader.kind !== 'candidate') return skip(fault, leader ? 'the leader runs the original statements' : 'no leader');
        return leader.send('step-down');
      case 'handoff':
        return this.handOff(fault, leader, planned.pick);
      case 'priority':
        return this.changePriority(fault, planned);
      case 'lock':
        return this.lock(fault, planned.duration);
      case 'cut-host':
        return this.cutHost(fault, leader, planned.duration);
      case 'clock-step':
        return this.stepClock(fault, planned);
      case 'burst':
        return this.burst(fault, planned.pick);
    }
  }

  /**
   * A follower of the slot is named, and another live process (the named one, at times)
   * asks the leader to hand over to it, as `observe-leadership handoff` would from anywhere.
   */
  private handOff(fault: FaultRecord, leader: WorkerProcess | undefined, pick: number): void {
    if (!leader || leader.kind !== 'candidate') return skip(fault, leader ? 'the leader runs the original statements' : 'no leader');
    const followers = this.workers.live().filter((w) => w !== leader && w.kind === 'candidate' && w.holder !== undefined && !w.paused);
    if (followers.length === 0) return skip(fault, 'no follower to name');
    const to = followers[Math.floor(pick * followers.length)];
    const asker = followers[Math.floor(pick * 7919) % followers.length];
    asker.send(`hand-off ${fault.slot},${to.holder}`);
  }

  /** A candidate of the run (the leader, at times) campaigns again with a new priority, and `preempt` on. */
  private changePriority(fault: FaultRecord, planned: PlannedFault): void {
    const candidates = this.workers.live().filter((w) => w.kind === 'candidate' && w.holder !== undefined && !w.paused);
    if (candidates.length === 0) return skip(fault, 'no candidate');
    const chosen = candidates[Math.floor(planned.pick * candidates.length)];
    chosen.send(`priority ${planned.priority ?? 0}`);
  }

  private end(leader: WorkerProcess, signal: 'SIGKILL' | 'SIGTERM'): void {
    leader.signal(signal);
    void this.workers.restartLater(leader);
  }

  /** Killed while it holds the write lock, with a ledger row written and not committed. */
  private killInFenced(fault: FaultRecord, leader: WorkerProcess | undefined): void {
    if (!leader || leader.kind !== 'candidate') return skip(fault, leader ? 'the leader runs the original statements' : 'no leader');
    const { workers } = this;
    leader.send(`fenced-hang ${fault.slot}`);
    workers.track(
      workers.hangOf(leader, fault.slot, fault.mono as number).then((hung) => {
        if (!hung) {
          // A command read late (the process was blocked meanwhile) may still hang it: it would
          // hold the write lock for good, so it is killed then, as the fault meant.
          workers.track(
            workers.hangOf(leader, fault.slot, fault.mono as number, 30_000).then((late) => {
              if (!late) return;
              leader.signal('SIGKILL');
              return workers.restartLater(leader);
            }),
          );
          return skip(fault, 'the fenced transaction did not start (the lease was lost meanwhile)');
        }
        Object.assign(fault, began());
        leader.signal('SIGKILL');
        void workers.restartLater(leader);
      }),
    );
  }

  /** Nobody is left to see the leader's end at once: the others wait for the lease. */
  private killWithStandbys(fault: FaultRecord, leader: WorkerProcess): void {
    const { workers } = this;
    workers.track(
      this.db.standbys(fault.slot).then((holders) => {
        if (holders === undefined) return skip(fault, 'this store keeps no standby places');
        const standbys = workers.live().filter((w) => w !== leader && holders.includes(w.holder ?? ''));
        const victims = [leader, ...standbys];
        Object.assign(fault, began(), { victims: victims.map((victim) => victim.pid) });
        for (const victim of victims) victim.signal('SIGKILL');
        const restarted = victims.map((victim) => workers.restartLater(victim));
        // Nobody left to take the slot: it waits for a victim to campaign again too.
        if (workers.live().every((w) => w.kind !== 'candidate' || victims.includes(w))) {
          return Promise.race(restarted).then((at) => void (at && Object.assign(fault, ended(at))));
        }
      }),
    );
  }

  private pause(fault: FaultRecord, leader: WorkerProcess, duration: number): void {
    leader.paused = true;
    leader.signal('SIGSTOP');
    this.workers.track(
      sleep(duration).then(() => {
        Object.assign(fault, ended()); // before SIGCONT: the process may report within the millisecond
        leader.signal('SIGCONT');
        leader.paused = false;
      }),
    );
  }

  private resubscribe(fault: FaultRecord, leader: WorkerProcess | undefined): void {
    if (!leader || leader.kind !== 'candidate') return skip(fault, leader ? 'the leader runs the original statements' : 'no leader');
    leader.send('unsubscribe');
    this.workers.track(sleep(this.timing.retryEvery).then(() => leader.send('subscribe')));
  }

  private lock(fault: FaultRecord, duration: number): void {
    if (this.lockHeld) return skip(fault, 'a lock is already held');
    this.lockHeld = true;
    this.workers.track(
      this.db.holdLock().then(async (held) => {
        if (!held) {
          this.lockHeld = false;
          return skip(fault, 'could not take the lock');
        }
        await sleep(duration);
        await this.db.releaseLock();
        this.lockHeld = false;
        Object.assign(fault, ended());
      }),
    );
  }

  /**
   * Everything on the leader's host loses the server without a word, for longer than a
   * lease: the leader must step down by its own deadline, the others take over.
   */
  private cutHost(fault: FaultRecord, leader: WorkerProcess | undefined, duration: number): void {
    const host = leader && this.workers.hostOf(leader.name);
    if (!leader || !host) return skip(fault, leader ? 'the leader runs on no host of its own' : 'no leader');
    host.cut();
    this.workers.track(
      sleep(duration).then(() => {
        host.heal();
        Object.assign(fault, ended());
      }),
    );
  }

  /** Every process on the clock sees it at once, leader and followers alike: one step, or a strobe back and forth. */
  private stepClock(fault: FaultRecord, { step, duration }: PlannedFault): void {
    const clock = this.clock as SteppedClock;
    fault.step = step as number;
    if (duration === 0) return clock.step(step as number);
    let forward = true;
    const strobe = setInterval(() => {
      clock.step(forward ? (step as number) : -(step as number));
      forward = !forward;
    }, 150);
    this.workers.track(
      sleep(duration).then(() => {
        clearInterval(strobe);
        if (!forward) clock.step(-(step as number)); // back where it was
        Object.assign(fault, ended());
      }),
    );
  }

  /** Half the followers killed at once, each restarted as soon as it is gone. */
  private burst(fault: FaultRecord, pick: number): void {
    const { workers } = this;
    const followers = workers.live().filter((w) => w.leading.size === 0 && !w.paused);
    const victims = followers.filter((_, i) => i % 2 === Math.floor(pick * 2));
    if (victims.length === 0) return skip(fault, 'no follower');
    fault.pid = victims[0].pid;
    delete fault.holder;
    for (const victim of victims) {
      victim.signal('SIGKILL');
      workers.track(victim.exited.then(() => workers.stopping || workers.start(victim.name, victim.kind)));
    }
  }
}

/** Records that `fault` was not injected, and why. */
function skip(fault: FaultRecord, why: string): void {
  fault.skipped = why;
  delete fault.pid;
  delete fault.holder;
}
