/**
 * What a simulated run must never show, judged on true time: two beliefs of one slot at the
 * same instant, a term that does not grow, a stream that ended, a slot left without a
 * leader once the faults stopped, an error nothing handled (or anything run outside the
 * simulated time, where one would go unseen), a fenced write outside its tenure.
 */
import type { SimHistory, SimRecord } from './world';

export interface SimViolation {
  check: 'overlap' | 'term-order' | 'malformed' | 'terminated' | 'liveness' | 'unhandled' | 'fenced' | 'handoff' | 'lock-delay' | 'preempt';
  detail: string;
  /** True time at which it shows. */
  at: number;
}

interface Belief {
  process: string;
  holder: string;
  slot: number;
  term: number;
  start: number;
  end: number;
}

export interface SimOutcome {
  violations: SimViolation[];
  /** Elections after a slot's first: each a change of tenure. */
  failovers: number;
}

export function checkRun(history: SimHistory): SimOutcome {
  const violations: SimViolation[] = [];
  const { slots, timing, noise } = history.scenario;
  const beliefs = beliefsOf(history.records, history.endedAt);
  for (let slot = 0; slot < slots; slot++) {
    const ofSlot = beliefs.filter((b) => b.slot === slot).sort((a, b) => a.start - b.start);
    for (let i = 0; i < ofSlot.length; i++) {
      for (let j = i + 1; j < ofSlot.length && ofSlot[j].start < ofSlot[i].end; j++) {
        const [a, b] = [ofSlot[i], ofSlot[j]];
        if (a.term === b.term && a.holder === b.holder) continue;
        violations.push({
          check: 'overlap',
          at: b.start,
          detail: `slot ${slot}: ${b.holder} (term ${b.term}) believed from ${ms(b.start)} while ${a.holder} (term ${a.term}) believed until ${ms(a.end)}`,
        });
      }
    }
    const elections = history.records.filter((r) => r.kind === 'event' && r.type === 'elected' && r.slot === slot);
    elections.forEach((e, i) => {
      if (i > 0 && (e.term as number) <= (elections[i - 1].term as number)) {
        violations.push({
          check: 'term-order',
          at: e.at,
          detail: `slot ${slot}: term ${e.term} elected after term ${elections[i - 1].term}`,
        });
      }
    });
    // Once the faults stopped and their effects ended (a pause runs up to three leases, a
    // sit-out one), the slot is never without a leader for longer than a store's answer late
    // by a lease, then the lease and a retry, can explain; and a lock-delay (up to half a
    // lease) and a lower priority's wait (a retry) where the candidates have them.
    const { expiresAfter, retryEvery } = timing;
    const settled = history.quietFrom + 4 * expiresAfter;
    const bound = 2 * expiresAfter + 2 * retryEvery + (noise.options ? expiresAfter / 2 + retryEvery : 0);
    const gap = longestGap(ofSlot, settled, history.endedAt);
    if (gap.length > bound) {
      violations.push({
        check: 'liveness',
        at: gap.from + bound,
        detail: `slot ${slot}: no leader from ${ms(gap.from)} for ${ms(gap.length)} after the faults stopped (allowed ${ms(bound)})`,
      });
    }
  }
  // A candidate's stream ends only where its connection was closed under it.
  const closed = new Set(history.records.filter((r) => r.kind === 'fault' && r.type === 'close').map((r) => r.process));
  for (const r of history.records) {
    if (r.kind === 'error' && !(closed.has(r.process) && r.detail?.startsWith('DATABASE_CLOSED')))
      violations.push({ check: 'terminated', at: r.at, detail: `${r.process} slot ${r.slot}: ${r.detail}` });
  }
  for (const r of history.records) {
    if (r.kind === 'unhandled') violations.push({ check: 'unhandled', at: r.at, detail: `${r.process}: ${r.detail}` });
    // A fenced write commits only inside its own tenure; on SQLite, before that tenure's lease
    // ran out too. PostgreSQL fences by the row's lock alone, not by a clock (see `fenced` there):
    // a leader's write after its lease ended commits if nobody took the slot meanwhile.
    const { tenure } = r;
    const outside = tenure?.holder !== r.holder || tenure.term !== r.term || (tenure.left < 0 && history.scenario.store !== 'postgres');
    if (r.kind === 'write' && r.type === 'fenced' && outside) {
      const found = tenure === undefined ? 'no lease' : `${tenure.holder} term ${tenure.term}, ${ms(tenure.left)} left`;
      violations.push({
        check: 'fenced',
        at: r.at,
        detail: `slot ${r.slot}: ${r.holder} wrote for term ${r.term} while the slot had ${found}`,
      });
    }
  }
  violations.push(...handoffsNotTaken(history.records));
  violations.push(...lockDelaysCut(history.records));
  violations.push(...preemptedEarly(history.records));
  violations.push(...malformed(history.records));
  const failovers = history.records.filter((r) => r.kind === 'event' && r.type === 'elected').length - slots;
  return { violations: violations.sort((a, b) => a.at - b.at), failovers: Math.max(0, failovers) };
}

/**
 * Each tenure's belief: from `elected` to the earliest of its `lost`, its deadline (moved by
 * each renewal that came before it), its process's death, its stream's end.
 */
function beliefsOf(records: SimRecord[], endedAt: number): Belief[] {
  const open = new Map<string, Belief & { deadline: number }>();
  const beliefs: Belief[] = [];
  const close = (key: string, at: number) => {
    const belief = open.get(key);
    if (!belief) return;
    open.delete(key);
    beliefs.push({ ...belief, end: Math.min(at, belief.deadline) });
  };
  for (const r of records) {
    // Killed, its candidates believe nothing any more; unsubscribed, they end without a word.
    if (r.kind === 'fault' && (r.type === 'kill' || r.type === 'restart' || r.type === 'unsubscribe')) {
      for (const [key, belief] of open) if (belief.process === r.process) close(key, r.at);
      continue;
    }
    const key = `${r.process} ${r.slot}`;
    if (r.kind === 'error') close(key, r.at); // its stream ended: nobody reads its belief any more
    if (r.kind !== 'event' || r.slot === undefined) continue;
    if (r.type === 'elected') {
      close(key, r.at);
      open.set(key, {
        process: r.process,
        holder: r.holder as string,
        slot: r.slot,
        term: r.term as number,
        start: r.at,
        end: r.at,
        deadline: r.deadline as number,
      });
    } else if (r.type === 'renewed') {
      const belief = open.get(key);
      if (!belief) continue;
      if (r.at > belief.deadline) {
        // Renewed after its lease ran out (paused meanwhile): the store found nobody took the
        // slot, so the tenure goes on; the belief ended at the deadline and starts again here.
        close(key, belief.deadline);
        open.set(key, { ...belief, start: r.at, end: r.at, deadline: r.deadline as number });
      } else belief.deadline = r.deadline as number;
    } else if (r.type === 'lost') {
      close(key, r.at);
    }
  }
  for (const key of [...open.keys()]) close(key, endedAt);
  return beliefs;
}

/**
 * A handoff to a live candidate by name, which the leader acted on (it said `lost`,
 * `handed-off`), is taken by that candidate: the slot's next election is its own, unless
 * anything else happened from the request to that election (a fault, a message lost or
 * late, a slow answer, an error; or a slow answer or a late message still on its way at the
 * request, or the leader's connection closed before it), which may rightly let another in
 * once the window ends.
 */
function handoffsNotTaken(records: SimRecord[]): SimViolation[] {
  const violations: SimViolation[] = [];
  const first = (from: number, where: (r: SimRecord) => boolean) => {
    for (let i = from; i < records.length; i++) if (where(records[i])) return i;
    return -1;
  };
  // What came before the record at hand: the end of the longest noise still lasting, the processes whose connection was closed.
  let lastingUntil = -Infinity;
  const closed = new Set<string>();
  records.forEach((asked, index) => {
    const named = asked.kind === 'fault' && asked.type === 'handoff' ? /^slot (\d+) term \d+ to (h\d+),/.exec(asked.detail ?? '') : null;
    if (named !== null && !closed.has(asked.process)) {
      const [slot, to] = [Number(named[1]), named[2]];
      const handed = first(
        index + 1,
        (r) => r.process === asked.process && r.slot === slot && r.type === 'lost' && r.detail === 'handed-off',
      );
      const next = handed < 0 ? -1 : first(handed + 1, (r) => r.kind === 'event' && r.slot === slot && r.type === 'elected');
      const disturbed = () =>
        lastingUntil >= asked.at || // a slow answer on its way, say
        records.slice(index + 1, next).some((r) => r.kind === 'fault' || r.kind === 'error' || r.type === 'error');
      if (next >= 0 && records[next].holder !== to && !disturbed()) {
        const elected = records[next];
        violations.push({
          check: 'handoff',
          at: elected.at,
          detail: `slot ${slot}: handed off to ${to}, and ${elected.holder} was elected (term ${elected.term}) with nothing else going on`,
        });
      }
    }
    if (asked.until !== undefined) lastingUntil = Math.max(lastingUntil, asked.until);
    if (asked.type === 'close') closed.add(asked.process); // the leader cannot write any more
  });
  return violations;
}

/**
 * Each candidate's events, in the order the campaign promises: `elected` only while it does
 * not lead; `renewed` and `lost` only while it leads, `renewed` with the term it was elected
 * with; nothing after its stream ended.
 */
function malformed(records: SimRecord[]): SimViolation[] {
  const violations: SimViolation[] = [];
  const state = new Map<string, { leading?: number; ended?: boolean }>();
  for (const r of records) {
    if (r.slot === undefined || (r.kind !== 'event' && r.kind !== 'error')) continue;
    const key = `${r.process} ${r.slot}`;
    if (r.type === 'subscribed') {
      state.set(key, {});
      continue;
    }
    const candidate = state.get(key) ?? {};
    state.set(key, candidate);
    const wrong = (why: string) =>
      violations.push({ check: 'malformed', at: r.at, detail: `${r.process} slot ${r.slot}: ${r.type} ${why}` });
    if (candidate.ended) wrong('after its stream ended');
    else if (r.kind === 'error') candidate.ended = true;
    else if (r.type === 'elected') {
      if (candidate.leading !== undefined) wrong(`while it led (term ${candidate.leading})`);
      candidate.leading = r.term;
    } else if (r.type === 'renewed') {
      if (candidate.leading !== r.term)
        wrong(`term ${r.term} while it ${candidate.leading === undefined ? 'did not lead' : `led term ${candidate.leading}`}`);
    } else if (r.type === 'lost') {
      if (candidate.leading === undefined) wrong('while it did not lead');
      candidate.leading = undefined;
    }
  }
  return violations;
}

export function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

/** The longest time within [from, to] that no belief covers. */
function longestGap(beliefs: Belief[], from: number, to: number): { from: number; length: number } {
  let longest = { from, length: 0 };
  let covered = from;
  for (const belief of [...beliefs].sort((a, b) => a.start - b.start)) {
    if (belief.end <= covered) continue;
    if (belief.start > covered && belief.start - covered > longest.length)
      longest = { from: covered, length: Math.min(belief.start, to) - covered };
    covered = Math.max(covered, belief.end);
    if (covered >= to) return longest;
  }
  return to - covered > longest.length ? { from: covered, length: to - covered } : longest;
}

/**
 * A tenure taken from a holder that still believed in it (paused, say: nothing could prove
 * its end) is announced no sooner than the taker's lock-delay after the take, if at all;
 * unless that holder's tenure ended meanwhile in a way the store proves (its process died,
 * or it said `lost`: its endpoint closes), which ends the lock-delay as documented.
 */
function lockDelaysCut(records: readonly SimRecord[]): SimViolation[] {
  const violations: SimViolation[] = [];
  records.forEach((take, index) => {
    if (take.kind !== 'take' || !take.lockDelay) return;
    let ended = false;
    for (let i = index + 1; i < records.length; i++) {
      const r = records[i];
      // The believer died or spoke (`lost`, say) before the announcement: a proven end.
      if (r.process === take.believer && (r.kind === 'fault' || r.kind === 'event')) ended = true;
      if (r.kind !== 'event' || r.type !== 'elected' || r.process !== take.process || r.slot !== take.slot || r.term !== take.term)
        continue;
      if (r.at < take.at + take.lockDelay && !ended && !endedAtOnce(records, i, take.believer)) {
        violations.push({
          check: 'lock-delay',
          at: r.at,
          detail: `slot ${take.slot}: ${take.holder} took term ${take.term} at ${ms(take.at)} ${take.detail}, and was elected ${ms(r.at - take.at)} later, within its lock-delay of ${ms(take.lockDelay)}`,
        });
      }
      return;
    }
  });
  return violations;
}

/** Whether `believer` died or spoke at the very instant of the record at `index`, recorded after it. */
function endedAtOnce(records: readonly SimRecord[], index: number, believer: string | undefined): boolean {
  const { at } = records[index];
  for (let i = index + 1; i < records.length && records[i].at <= at; i++) {
    const r = records[i];
    if (r.process === believer && (r.kind === 'fault' || r.kind === 'event')) return true;
  }
  return false;
}

/**
 * A leader that gives way to a higher priority (`preempt`) has led for a lease first, so that
 * the slot changes hands this way at most once a lease: its `lost` (`preempted`) comes no
 * sooner than the deadline its `elected` said, which is the tenure's start (its attempt's
 * send) and a lease. A subscription with a lock-delay is not judged: its tenure is announced
 * once its quiet time ended, with the deadline of that moment.
 */
function preemptedEarly(records: SimRecord[]): SimViolation[] {
  const violations: SimViolation[] = [];
  const quiet = new Set<string>();
  const elected = new Map<string, SimRecord>();
  for (const r of records) {
    if (r.slot === undefined || r.kind !== 'event') continue;
    const key = `${r.process} ${r.slot}`;
    if (r.type === 'subscribed') {
      if (r.detail?.includes('"lockDelay"')) quiet.add(key);
      else quiet.delete(key);
    } else if (r.type === 'elected') elected.set(key, r);
    else if (r.type === 'lost' && r.detail === 'preempted') {
      const tenure = elected.get(key);
      if (tenure?.deadline === undefined || quiet.has(key) || r.at >= tenure.deadline) continue;
      violations.push({
        check: 'preempt',
        at: r.at,
        detail: `slot ${r.slot}: ${r.holder} gave way (term ${tenure.term}) after leading ${ms(r.at - tenure.at)}, before the lease its election counted (until ${ms(tenure.deadline)})`,
      });
    }
  }
  return violations;
}
