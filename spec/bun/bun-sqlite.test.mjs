// Run by Bun's own test runner (`bun test ./spec/bun`, from spec/bun.processes.spec.ts): the
// library as a Bun user has it (the built package, by its name) with Bun's `bun:sqlite`
// `Database` passed as it is. better-sqlite3 does not load in Bun at all.
import { afterEach, beforeEach, describe, expect, it } from 'bun:test';
import { Database } from 'bun:sqlite';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, firstValueFrom, take } from 'rxjs';
import { fenced, handOff, observeLeader, observeLeadership } from 'observe-leadership';

const timing = { renewEvery: 50, expiresAfter: 1_000, retryEvery: 50 };

async function eventually(what, condition, within = 10_000) {
  for (const end = Date.now() + within; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 10))) {
    const value = condition();
    if (value) return value;
  }
  throw new Error(`Timed out waiting for ${what}`);
}

describe('the clock leases are timed by', () => {
  // Bun's process.hrtime counts from the process's start; leases written by Bun processes
  // must be timed on the host's monotonic clock, as Node.js processes time theirs.
  it("is the host's monotonic clock, which a Node.js process reads in between", () => {
    const { readClocks, monotonicScheduler } = createRequire(import.meta.url)('../../dist/core/monotonic-scheduler.js');
    const before = readClocks(monotonicScheduler);
    const node = spawnSync('node', ['-p', 'Number(process.hrtime.bigint()) / 1e6'], { encoding: 'utf8' });
    const after = readClocks(monotonicScheduler);
    expect(before.clock).toStartWith('monotonic ');
    expect(Number(node.stdout)).toBeGreaterThanOrEqual(before.now);
    expect(Number(node.stdout)).toBeLessThanOrEqual(after.now);
  });
});

describe('bun:sqlite', () => {
  let folder;
  let file;
  let connections;
  let subscriptions;
  const connect = (options) => {
    const db = new Database(file, options);
    connections.push(db);
    return db;
  };
  const candidate = (db, holder) => {
    const events = [];
    const subscription = observeLeadership(db, { ...timing, holder }).subscribe((event) => events.push(event));
    subscriptions.push(subscription);
    return { events, subscription, types: () => events.map(({ type }) => type) };
  };
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'observe-leadership-bun-'));
    file = join(folder, 'leader.db');
    connections = [];
    subscriptions = [];
  });
  afterEach(() => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    for (const db of connections) db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('elects one candidate, renews, and hands over at once when it unsubscribes, with a greater term', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const b = candidate(connect(), 'b');
    await eventually('a renewed twice', () => a.types().filter((type) => type === 'renewed').length >= 2);
    expect(b.events).toEqual([]);
    a.subscription.unsubscribe();
    await eventually('b elected', () => b.types().includes('elected'), timing.expiresAfter / 2);
    expect(b.events[0].term).toBeGreaterThan(a.events[0].term);
  });

  it('hands off to the named candidate, asked on a read-only connection of its own (the words go through a file watch)', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const [b, c] = [candidate(connect(), 'b'), candidate(connect(), 'c')];
    const { from, to } = await handOff(connect({ readonly: true }), { to: 'c' });
    expect(from).toEqual({ slot: 0, holder: 'a', term: a.events[0].term });
    expect(to).toMatchObject({ slot: 0, holder: 'c' });
    await eventually('c elected', () => c.types().includes('elected'));
    expect(c.events[0].term).toBe(to.term);
    expect(a.events.at(-1)).toMatchObject({ type: 'lost', reason: 'handed-off' });
    expect(b.events).toEqual([]);
  });

  it('fences: the work commits with a lease that holds, nothing of it with one that does not', async () => {
    const db = connect();
    db.exec('CREATE TABLE ledger (value INTEGER NOT NULL)');
    const a = candidate(db, 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const lease = a.events[0];
    const insert = db.prepare('INSERT INTO ledger (value) VALUES (?)');
    fenced(db, lease, () => insert.run(1));
    expect(() => fenced(db, { ...lease, term: lease.term + 1 }, () => insert.run(2))).toThrow(
      expect.objectContaining({ code: 'LEASE_LOST' }),
    );
    expect(db.prepare('SELECT value FROM ledger').values()).toEqual([[1]]);
  });

  it('reports a lock held by another connection as a transient DATABASE_BUSY, and renews once it is gone', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const other = connect();
    other.exec('BEGIN EXCLUSIVE');
    await eventually('an error event', () => a.types().includes('error'), 5_000);
    other.exec('COMMIT');
    const errors = a.events.filter((event) => event.type === 'error').map((event) => event.error);
    expect(errors.every((error) => error.code === 'DATABASE_BUSY' && error.transient)).toBe(true);
    const renewals = a.types().filter((type) => type === 'renewed').length;
    await eventually('a renewed again', () => a.types().filter((type) => type === 'renewed').length > renewals);
    expect(a.types()).not.toContain('lost');
  });

  it('lets observers watch on a read-only connection, and refuses to campaign on one', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const reader = connect({ readonly: true });
    const state = await firstValueFrom(
      observeLeader(reader).pipe(
        filter((seen) => seen.holder !== null),
        take(1),
      ),
    );
    expect(state).toMatchObject({ holder: 'a', term: a.events[0].term });
    const refused = await firstValueFrom(observeLeadership(reader, { ...timing, slot: 1 }).pipe(take(1))).catch((error) => error);
    expect(refused).toMatchObject({ code: 'DATABASE_READONLY' });
  });

  it('refuses a connection in exclusive locking mode', async () => {
    const db = connect();
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    const refused = await firstValueFrom(observeLeadership(db, timing)).catch((error) => error);
    expect(refused).toMatchObject({ code: 'EXCLUSIVE_LOCKING' });
  });

  it('runs the command line on bun:sqlite: init, then status', () => {
    const cli = join(import.meta.dir, '..', '..', 'dist', 'cli', 'main.js');
    const init = spawnSync(process.execPath, [cli, 'init', file], { encoding: 'utf8' });
    expect(init.stderr).toBe('');
    expect(init.stdout).toContain(`created: ${file}`);
    const status = spawnSync(process.execPath, [cli, 'status', file, '--json'], { encoding: 'utf8' });
    expect(status.status).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ holder: null });
  });
});
