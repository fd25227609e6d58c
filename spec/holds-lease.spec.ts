import Database from 'better-sqlite3';
import { Subject, takeUntil, timer } from 'rxjs';
import { ElectedEvent, holdsLease, LeadershipEvent, observeLeadership } from '../src';
import { virtualTime } from './support/virtual-time';

const timing = { renewEvery: 10, expiresAfter: 30, retryEvery: 4 };

describe('holdsLease', () => {
  let databases: Database.Database[];
  beforeEach(() => {
    databases = [new Database(':memory:'), new Database(':memory:')];
  });
  afterEach(() => databases.forEach((db) => db.close()));

  /** Runs a candidate of holder `host` on each database in virtual time until 20 ms (the second stepping down at 5 ms if told); returns what `probe` saw at 6 ms. */
  function at6ms<T>(probe: (elected: ElectedEvent[]) => T, stepDownSecond = false): T {
    const scheduler = virtualTime();
    let seen: T | undefined;
    scheduler.run(() => {
      const stepDown = new Subject<void>();
      const elected: ElectedEvent[] = [];
      databases.forEach((db, i) =>
        observeLeadership(db, { ...timing, holder: 'host', scheduler, ...(i === 1 && { stepDown }) })
          .pipe(takeUntil(timer(20, scheduler)))
          .subscribe((event: LeadershipEvent) => event.type === 'elected' && (elected[i] ??= event)),
      );
      if (stepDownSecond) scheduler.schedule(() => stepDown.next(), 5);
      scheduler.schedule(() => void (seen = probe(elected)), 6);
    });
    return seen as T;
  }

  it("is true for a tenure this process's candidate holds, and false once it ended or for none of its candidates", () => {
    const [held, ended, unknown] = at6ms(
      (elected) => [holdsLease(elected[0]), holdsLease(elected[1]), holdsLease({ slot: 0, holder: 'nobody', term: 1 })],
      true,
    );
    expect({ held, ended, unknown }).toEqual({ held: true, ended: false, unknown: false });
  });

  it('answers for the election of the lease asked about: two databases, one holder name, the same term in each', () => {
    // Both candidates are elected at term 1, each in its own database; the second steps down.
    // Its lease is over even though the first still believes in a lease of that slot, holder and term.
    const answers = at6ms((elected) => elected.map((lease) => [lease.term, holdsLease(lease)]), true);
    expect(answers).toEqual([
      [1, true],
      [1, false],
    ]);
  });

  it('refuses a lease written by hand that either of two elections of this process could hold, and answers one that only one could', () => {
    const handWritten = ({ slot, holder, term }: ElectedEvent) => ({ slot, holder, term });
    const probe = (lease: ElectedEvent) => {
      try {
        return holdsLease(handWritten(lease));
      } catch (error) {
        return error;
      }
    };
    expect(at6ms((elected) => probe(elected[0]))).toEqual(
      expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('two elections of this process') }),
    );
    databases.pop()?.close(); // one election left
    expect(at6ms((elected) => probe(elected[0]))).toBe(true);
  });
});
