import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { simCorpus } from '../support/sim-corpus';

/**
 * The simulator on PostgreSQL, in a process of its own: PGlite loads its WebAssembly by a
 * dynamic import, which Jest's module system refuses. The built simulator runs a scenario
 * twice on one engine and says what it saw.
 */
const build = join(__dirname, '..', '..', 'build', 'sim');

/** Its corpus of findings on PostgreSQL (see spec/sim/corpus). */
const corpus = simCorpus('postgres');

/** Runs a scenario (the expression `scenario`, in the child) twice on one engine, and says what it saw. */
function onPostgres(scenario: string): Promise<{ same: boolean; failovers: number; writes: number; violation?: string }> {
  const script = `
    const { simulateOnItsStore, timelineNear } = require(${JSON.stringify(join(build, 'run.js'))});
    const { closeEngineOfThread } = require(${JSON.stringify(join(build, 'postgres', 'sim-server.js'))});
    const { scenarioOf } = require(${JSON.stringify(join(build, 'scenario.js'))});
    (async () => {
      const scenario = ${scenario};
      const first = await simulateOnItsStore(scenario);
      const again = await simulateOnItsStore(JSON.parse(JSON.stringify(scenario)));
      const records = first.history.records;
      const [violation] = first.violations;
      console.log(JSON.stringify({
        same: JSON.stringify(records) === JSON.stringify(again.history.records),
        failovers: first.failovers,
        writes: records.filter((r) => r.kind === 'write' && r.type === 'fenced').length,
        ...(violation && { violation: [violation.check + ': ' + violation.detail, ...timelineNear(first.history, violation)].join('\\n') }),
      }));
      await closeEngineOfThread();
    })();`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error === null ? resolve(JSON.parse(stdout.trim().split('\n').at(-1) as string)) : reject(new Error(`${error.message}\n${stderr}`)),
    ),
  );
}

describe('the simulator on PostgreSQL (npm run simulate -- --postgres)', () => {
  it('runs the PostgreSQL store on its real statements (PGlite) through faults: the same run from the same scenario, and no violation', async () => {
    const seed = Date.now() % 100_000;
    const seen = await onPostgres(`scenarioOf(${seed}, { candidates: 3, slots: 2, duration: 10000, store: 'postgres' })`);
    // A violation shows with its seed: `npm run simulate -- --postgres --seed N --candidates 3 --slots 2 --duration 10000` finds and shrinks it.
    expect({ seed, violation: seen.violation }).toEqual({ seed, violation: undefined });
    expect(seen.same).toBe(true);
    expect(seen.failovers).toBeGreaterThan(10);
    expect(seen.writes).toBeGreaterThan(10); // fenced writes the checker judged
  }, 60_000);

  it.each(corpus)(
    'replays $file of its corpus of findings (spec/sim/corpus) with no violation',
    async ({ scenario }) => {
      const seen = await onPostgres(JSON.stringify(scenario));
      expect(seen.violation).toBeUndefined();
      expect(seen.same).toBe(true);
    },
    60_000,
  );
});
