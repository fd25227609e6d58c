import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BehaviorSubject } from 'rxjs';
import { eventually } from '../../test-kit/eventually';
import { observeLeadership } from '../../src';
import { greetedUpToNow, watcherCount } from '../../test-kit/endpoint-sockets';
import { SpawnedScript } from '../support/spawned-script';
import { temporaryDatabase, TemporaryDatabase } from '../support/temporary-database';
import { testDatabaseUrl, testSchema, TestSchema } from '../support/postgres-database';
import { postgresLeaseStore } from '../../src/postgres';
import { at } from '../support/clock-reading';

const cliScript = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

const cli = (...args: string[]) => new SpawnedScript(cliScript, args).result();

/** Whether process `pid` exists and is not a zombie (one that nobody reaped is dead all the same). */
function isRunning(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z');
  } catch {
    return false;
  }
}

describe('the observe-leadership command', () => {
  let file: TemporaryDatabase;
  let running: SpawnedScript[];
  beforeEach(() => {
    file = temporaryDatabase();
    file.open(); // a WAL database, open as workers keep it
    running = [];
  });
  afterEach(async () => {
    // Gracefully first: a runner killed outright would leave its command running, holding
    // the output pipe open.
    for (const each of running) each.process.kill('SIGTERM');
    const stopped = Promise.all(running.map((each) => each.exited));
    const late = setTimeout(() => running.forEach((each) => each.process.kill('SIGKILL')), 10_000);
    await stopped;
    clearTimeout(late);
    file.remove();
  });
  const start = (...args: string[]) => {
    const started = new SpawnedScript(cliScript, args);
    running.push(started);
    return started;
  };

  describe('its conventions', () => {
    it.each(['status', 'watch', 'handoff', 'init', 'run'])(
      '%s: --help and -h say its usage, with an example, and exit 0',
      async (command) => {
        for (const flag of ['--help', '-h']) {
          const { code, output } = await cli(command, flag);
          expect({ code, output }).toEqual({
            code: 0,
            output: expect.stringMatching(new RegExp(`^usage: observe-leadership ${command} `)),
          });
          expect(output).toMatch(/\nexample:\n {2}observe-leadership /);
        }
        // Wherever it comes among the options, and through `help <command>`.
        expect((await cli(command, file.file, '--slot', '1', '--help')).output).toMatch(
          new RegExp(`^usage: observe-leadership ${command} `),
        );
        expect((await cli('help', command)).output).toMatch(new RegExp(`^usage: observe-leadership ${command} `));
      },
    );

    it('says its version, and its usage without a command', async () => {
      const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
      expect(await cli('--version')).toEqual({ code: 0, output: `${version}\n` });
      expect(await cli('--help')).toEqual({ code: 0, output: expect.stringContaining('observe-leadership <command> --help tells more') });
      expect(await cli()).toEqual({ code: 2, output: expect.stringMatching(/^usage: observe-leadership <command>/) });
    });

    it('refuses extra arguments, a negative slot, and a directory or other non-file, each in its own words', async () => {
      const usage = (command: string, message: string) => ({
        code: 2,
        output: `observe-leadership: ${message}\nrun observe-leadership ${command} --help for usage\n`,
      });
      expect(await cli('status', file.file, 'jobs.db')).toEqual(
        usage('status', 'unexpected argument "jobs.db": one database, then options'),
      );
      expect(await cli('init', file.file, 'second.db')).toEqual(
        usage('init', 'unexpected argument "second.db": one database, then options'),
      );
      expect(await cli('status', file.file, '--slot', '-1')).toEqual(
        usage('status', '--slot must be a whole number from 0 to 9007199254740991, got -1'),
      );
      const folder = join(file.file, '..');
      for (const command of ['status', 'watch', 'handoff', 'init']) {
        expect(await cli(command, folder)).toEqual({
          code: 5,
          output: `observe-leadership: ${folder} is a directory, not a SQLite database file\n`,
        });
      }
      expect(await cli('status', '/dev/null')).toEqual({
        code: 5,
        output: 'observe-leadership: /dev/null is not a regular file, so not a SQLite database\n',
      });
    });

    it("names run's flags, not the API's fields, and a value left out as the default it is", async () => {
      const refused = (message: string) => ({
        code: 2,
        output: `observe-leadership: ${message}\nrun observe-leadership run --help for usage\n`,
      });
      expect(await cli('run', file.file, '--renew-every', '5000', '--expires-after', '3000', '--', 'true')).toEqual(
        refused('--renew-every must be less than --expires-after (3000), got 5000'),
      );
      expect(await cli('run', file.file, '--expires-after', '3000', '--', 'true')).toEqual(
        refused('--renew-every must be less than --expires-after (3000), got 30000 (its default)'),
      );
    });
  });

  describe('init', () => {
    it('creates a SQLite file with the lease tables, once, which run then campaigns on; run never creates one itself', async () => {
      const fresh = join(file.file, '..', 'fresh.db');
      const refused = await cli('run', fresh, '--', 'true');
      expect(refused).toEqual({
        code: 3,
        output: expect.stringContaining(
          `no database at ${fresh}; if that is the path you meant, create it once with: observe-leadership init ${fresh}`,
        ),
      });
      expect(await cli('init', fresh, '--wal')).toEqual({
        code: 0,
        output: `created: ${fresh}, with the lease tables (journal_mode wal)\n`,
      });
      const tables = new Database(fresh, { readonly: true });
      try {
        expect(
          tables
            .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'worker_leadership%' AND type = 'table' ORDER BY name")
            .pluck()
            .all(),
        ).toEqual([
          'worker_leadership',
          'worker_leadership_advertised',
          'worker_leadership_candidate',
          'worker_leadership_deadline',
          'worker_leadership_standby',
          'worker_leadership_term',
        ]);
      } finally {
        tables.close();
      }
      expect(await cli('init', fresh)).toEqual({ code: 0, output: `ready: ${fresh}, with the lease tables (journal_mode wal)\n` });
      expect(await cli('status', fresh)).toMatchObject({ code: 0, output: expect.stringContaining('the slot is free') });
      expect(await cli('run', fresh, '--', 'true')).toMatchObject({ code: 0, output: expect.stringContaining('elected, term 1') });
    });

    it('refuses what is not a SQLite file, and PostgreSQL, whose candidates make their table', async () => {
      const text = join(file.file, '..', 'notes.txt');
      writeFileSync(text, 'not a database, and long enough to be read as one '.repeat(20));
      expect(await cli('init', text)).toEqual({ code: 5, output: expect.stringContaining(`${text} is not a SQLite database`) });
      expect(await cli('init', 'postgres://nobody@127.0.0.1/none')).toEqual({
        code: 2,
        output: expect.stringContaining('init is for SQLite files'),
      });
      expect(await cli('init')).toEqual({ code: 2, output: expect.stringContaining('which SQLite file?') });
    });
  });

  describe('status', () => {
    it('says what is wrong, with an exit code of its own: missing file 3, no table 4, not a database 5, bad arguments 2', async () => {
      expect(await cli('status', join(file.file, '..', 'missing.db'))).toEqual({
        code: 3,
        output: expect.stringContaining('no database at'),
      });
      const packageJson = join(__dirname, '..', '..', 'package.json');
      expect(await cli('status', packageJson)).toEqual({
        code: 5,
        output: `observe-leadership: ${packageJson} is not a SQLite database, or a damaged one (file is not a database)\n`,
      });
      expect(await cli('status', file.file, '--frobnicate')).toEqual({
        code: 2,
        output: expect.stringContaining("Unknown option '--frobnicate'"),
      });
      expect(await cli('status', file.file, '--slot')).toEqual({
        code: 2,
        output: expect.stringContaining("Option '--slot <value>' argument missing"),
      });
      expect(await cli('status', file.file)).toEqual({ code: 4, output: expect.stringContaining('no worker_leadership table') });
      expect(await cli('status', file.file, '--slot', 'x')).toEqual({
        code: 2,
        output: expect.stringContaining('--slot must be a whole number'),
      });
      expect(await cli('frobnicate')).toEqual({ code: 2, output: expect.stringContaining('unknown command frobnicate') });
    });

    it('says why a handoff cannot be made: nobody leads (exit 1), no table (4), bad arguments (2)', async () => {
      const exits = (code: number, saying: string) => ({ code, output: expect.stringContaining(saying) });
      expect(await cli('handoff', file.file)).toEqual(exits(4, 'no worker_leadership table'));
      file.open().exec('CREATE TABLE worker_leadership (slot INTEGER PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)');
      expect(await cli('handoff', file.file)).toEqual(exits(1, 'NO_LEADER: Nobody leads slot 0'));
      expect(await cli('handoff', file.file, '--to')).toEqual(exits(2, "Option '--to <value>' argument missing"));
      expect(await cli('handoff', file.file, '--within', '0')).toEqual(exits(2, '--within must be a whole number'));
    });

    it('tells who leads a database that a worker is using, where it says it can be reached, and who stands by, as text and as JSON', async () => {
      const worker = observeLeadership(file.open(), { holder: 'worker-1', advertise: 'http://10.0.0.1:8080' }).subscribe();
      const standbys = ['worker-3', 'worker-2'].map((holder) => observeLeadership(file.open(), { holder }).subscribe());
      try {
        const text = await cli('status', file.file);
        expect(text.code).toBe(0);
        expect(text.output).toMatch(
          /holder +worker-1\nterm +1\nexpires +in \d+\.\d s .*\nreach +http:\/\/10\.0\.0\.1:8080\nlive +yes\nstandby +worker-2, worker-3\n$/,
        );
        const json = await cli('status', file.file, '--json');
        const status = JSON.parse(json.output);
        expect(status).toEqual({
          slot: 0,
          holder: 'worker-1',
          term: 1,
          expiresAt: expect.any(Number),
          expiresIn: expect.any(Number),
          live: true,
          advertised: 'http://10.0.0.1:8080',
          standingBy: ['worker-2', 'worker-3'],
        });
        expect(Number.isInteger(status.expiresIn)).toBe(true); // whole ms, as the lease's end is stored
      } finally {
        worker.unsubscribe();
        for (const standby of standbys) standby.unsubscribe();
      }
      expect(JSON.parse((await cli('status', file.file, '--json')).output)).toMatchObject({
        holder: null,
        live: false,
        advertised: null,
        standingBy: [],
      });
    });

    it('refuses a handoff to a holder that does not stand by (a typo): nothing changes, and it names those that do', async () => {
      const leader: string[] = [];
      const worker = observeLeadership(file.open(), { holder: 'worker-1' }).subscribe((event) => leader.push(event.type));
      const standby = observeLeadership(file.open(), { holder: 'worker-2' }).subscribe();
      try {
        expect(await cli('handoff', file.file, '--to', 'worker-22')).toEqual({
          code: 1,
          output:
            'observe-leadership: HANDOFF_NOT_STANDING: worker-22 did not answer as a standing candidate of slot 0 within 2000 ms, ' +
            'so nothing was handed over: worker-1 still leads (term 1). Standing candidates that answered: worker-2\n',
        });
        expect(leader).toEqual(['elected']);
        expect(JSON.parse((await cli('status', file.file, '--json')).output)).toMatchObject({ holder: 'worker-1', term: 1 });
      } finally {
        worker.unsubscribe();
        standby.unsubscribe();
      }
    });

    it('waits out a lock held for a moment, as a busy timeout would, though the library never waits in one', async () => {
      const rollback = temporaryDatabase('delete'); // readers too are kept out there
      try {
        const worker = observeLeadership(rollback.open(), { holder: 'worker-1' }).subscribe();
        const holder = rollback.open({ timeout: 1_000 });
        holder.exec('BEGIN EXCLUSIVE');
        const released = new Promise((resolve) => setTimeout(resolve, 300)).then(() => holder.exec('COMMIT'));
        const answer = await cli('status', rollback.file, '--json');
        await released;
        worker.unsubscribe();
        expect(answer.code).toBe(0);
        expect(JSON.parse(answer.output)).toMatchObject({ holder: 'worker-1', live: true });
      } finally {
        rollback.remove();
      }
    });
  });

  describe('--prometheus', () => {
    it('prints the state in Prometheus text format, under the names of leaderMetrics(), for status and at each change for watch', async () => {
      const watcher = start('watch', file.file, '--poll-every', '100', '--prometheus');
      const worker = observeLeadership(file.open(), { holder: 'worker-"1"' }).subscribe();
      try {
        const { code, output } = await cli('status', file.file, '--prometheus');
        expect(code).toBe(0);
        const lines = output.trim().split('\n');
        expect(lines).toContain('# TYPE leadership_observed_leader gauge');
        expect(lines).toContain('leadership_observed_leader{leadership_slot="0",leadership_holder="worker-\\"1\\""} 1');
        expect(lines).toContain('leadership_observed_term{leadership_slot="0",leadership_holder="worker-\\"1\\""} 1');
        expect(lines.find((line) => line.startsWith('leadership_observed_lease_expires_in_seconds{leadership_slot="0"} '))).toMatch(
          / [1-5]\d\.\d+$/,
        );
        // Every sample line is a name, labels and a number.
        for (const line of lines.filter((l) => !l.startsWith('#'))) expect(line).toMatch(/^[a-z_]+\{[^}]*\} -?\d+(\.\d+)?$/);
        await watcher.shows(/leadership_observed_leader\{leadership_slot="0",leadership_holder="worker-\\"1\\""\} 1/);
      } finally {
        worker.unsubscribe();
      }
      await watcher.shows(/leadership_observed_leader\{leadership_slot="0"\} 0/);
      expect(await cli('status', file.file, '--prometheus')).toEqual({
        code: 0,
        output: expect.stringContaining('leadership_observed_leader{leadership_slot="0"} 0'),
      });
      expect(await cli('status', file.file, '--json', '--prometheus')).toEqual({
        code: 2,
        output: expect.stringContaining('--json or --prometheus, not both'),
      });
      watcher.process.kill('SIGINT');
      expect(await watcher.exited).toBe(0);
    });
  });

  describe('watch', () => {
    it('prints each change of hands, and of what the leader advertises, until Ctrl-C, then exits 0', async () => {
      const watcher = start('watch', file.file, '--poll-every', '100');
      const address = new BehaviorSubject('http://10.0.0.1:8080');
      const worker = observeLeadership(file.open(), { holder: 'worker-1', advertise: address }).subscribe();
      await eventually('the election shown', () => watcher.output.includes('worker-1 leads, term 1, lease until'));
      expect(watcher.output).toMatch(/worker-1 leads, term 1, lease until [\d:.]+, reach at http:\/\/10\.0\.0\.1:8080\n/);
      address.next('http://10.0.0.2:8080');
      await watcher.shows(/worker-1 renewed, term 1, lease until [\d:.]+, reach at http:\/\/10\.0\.0\.2:8080\n/);
      worker.unsubscribe();
      await eventually('the release shown', () => watcher.output.includes('nobody leads (worker-1 released'));
      watcher.process.kill('SIGINT');
      expect(await watcher.exited).toBe(0);
    });
  });

  describe('run', () => {
    const timing = ['--renew-every', '200', '--expires-after', '1000', '--retry-every', '100'];
    // A command that says which term it runs for, and says so again when asked to stop.
    const command = (name: string) => {
      const script = join(file.file, '..', `${name}.sh`);
      writeFileSync(
        script,
        `echo "${name} runs for term $OBSERVE_LEADERSHIP_TERM"\ntrap 'echo "${name} stops"; exit 0' TERM\nwhile true; do sleep 0.05; done\n`,
      );
      return ['bash', script];
    };

    it('runs the command only in the leader; on SIGTERM stops it, releases, and exits with its code; the next takes over', async () => {
      const first = start('run', file.file, ...timing, '--', ...command('one'));
      await eventually('the first command running', () => first.output.includes('one runs for term 1'));
      const second = start('run', file.file, ...timing, '--', ...command('two'));
      await eventually('the second campaigning', () => second.output.includes('campaigning'));
      expect(second.output).not.toContain('two runs');
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(first.output).toContain('one stops');
      await eventually('the second command running', () => second.output.includes('two runs for term 2'));
    });

    it('stops the command when the lease is lost, and campaigns again', async () => {
      const runner = start('run', file.file, ...timing, '--', ...command('one'));
      await eventually('the command running', () => runner.output.includes('one runs for term 1'));
      // Another holder takes the slot (as after a pause): the next renewal finds it gone.
      file
        .open()
        .prepare(`UPDATE worker_leadership SET holder = 'thief', expires_at = ? WHERE slot = 0`)
        .run(Date.now() + 60_000);
      await eventually(
        'the command stopped',
        () => runner.output.includes('lost the lease (superseded)') && runner.output.includes('one stops'),
      );
      expect(runner.process.exitCode).toBeNull(); // still campaigning
    });

    it('takes its command down with it when killed outright (SIGKILL), before another runner takes over early', async () => {
      const pidFile = (name: string) => join(file.file, '..', `${name}.pid`);
      // The default timing: the lease has 60 s to run when the runner dies.
      const sleeper = (name: string) => [
        'bash',
        '-c',
        `echo $$ > ${pidFile(name)}; echo "${name} runs for term $OBSERVE_LEADERSHIP_TERM"; exec sleep 600`,
      ];
      const first = start('run', file.file, '--', ...sleeper('one'));
      await first.shows(/one runs for term 1/);
      const second = start('run', file.file, '--', ...sleeper('two'));
      await second.shows(/campaigning/);
      await eventually('the second runner watching the first', () => watcherCount(file.file) === 1);
      // Accepted is not yet greeted: a kill in between would leave the second without proof.
      expect(await greetedUpToNow(file.file)).toBe(true);
      const command = Number(readFileSync(pidFile('one'), 'utf8'));
      expect(isRunning(command)).toBe(true);
      first.process.kill('SIGKILL');
      await second.shows(/two runs for term 2/);
      expect(isRunning(command)).toBe(false);
    });

    it('hands the command over to the runner named by handoff: the leader stops its command and campaigns on, the named one starts its own', async () => {
      const first = start('run', file.file, '--holder', 'runner-one', ...timing, '--', ...command('one'));
      await eventually('the first command running', () => first.output.includes('one runs for term 1'));
      const second = start('run', file.file, '--holder', 'runner-two', ...timing, '--', ...command('two'));
      await eventually(
        'the second campaigning',
        () => second.output.includes('campaigning for slot 0 of') && second.output.includes('as runner-two'),
      );
      const handoff = await cli('handoff', file.file, '--to', 'runner-two');
      expect(handoff).toEqual({
        code: 0,
        output: expect.stringMatching(/^slot 0: runner-one \(term 1\) handed over to runner-two \(term 3\) in \d+ ms\n$/),
      });
      await eventually('the second command running', () => second.output.includes('two runs for term 3'));
      expect(first.output).toContain('lost the lease (handed-off), term 1');
      await eventually('the first command stopped', () => first.output.includes('one stops'));
      expect(first.process.exitCode).toBeNull(); // still campaigning
      expect(await cli('handoff', file.file, '--to', 'runner-two')).toEqual({
        code: 0,
        output: 'slot 0: runner-two leads already (term 3); nothing to hand off\n',
      });
      // A misspelt name changes nothing: runner-two goes on leading.
      expect(await cli('handoff', file.file, '--to', 'runner-on')).toEqual({
        code: 1,
        output: expect.stringContaining(
          'HANDOFF_NOT_STANDING: runner-on did not answer as a standing candidate of slot 0 within 2000 ms, so nothing was handed over: ' +
            'runner-two still leads (term 3). Standing candidates that answered: runner-one',
        ),
      });
      expect(second.output).not.toContain('lost the lease');
    });

    it('releases and exits with the code of a command that ends by itself', async () => {
      expect(await cli('run', file.file, '--', 'bash', '-c', 'exit 7')).toEqual({
        code: 7,
        output: expect.stringContaining('exited with code 7: releasing'),
      });
      expect(new Database(file.file, { readonly: true }).prepare('SELECT count(*) AS n FROM worker_leadership').get()).toEqual({ n: 0 });
      expect(await cli('run', file.file, '--', join(file.file, '..', 'no-such-command'))).toMatchObject({ code: 127 });
      expect(await cli('run', file.file)).toEqual({ code: 2, output: expect.stringContaining('which command?') });
    });
  });

  describe('on PostgreSQL', () => {
    let test: TestSchema;
    let url: string;
    beforeEach(() => {
      test = testSchema();
      url = testDatabaseUrl();
    });
    afterEach(async () => {
      for (const each of running) each.process.kill('SIGTERM');
      await Promise.all(running.map((each) => each.exited));
      running = [];
      await test.drop();
    });
    const inSchema = () => ['--schema', test.schema];

    it('says what is wrong with the same exit codes: no server 3, no table 4, --schema with a file 2', async () => {
      const closed = new URL(url);
      closed.port = '1';
      expect(await cli('status', closed.toString())).toEqual({ code: 3, output: expect.stringContaining('cannot reach postgres://') });
      expect(await cli('status', url, ...inSchema())).toEqual({
        code: 4,
        output: expect.stringContaining(`no ${test.schema}.worker_leadership table`),
      });
      expect(await cli('status', file.file, ...inSchema())).toEqual({
        code: 2,
        output: expect.stringContaining('--schema and --table are for a postgres:// URL'),
      });
    });

    it('tells who leads as text and JSON, and watches the slot change hands', async () => {
      const store = postgresLeaseStore(test.pool, { schema: test.schema });
      await store.acquire(1, 'setup', at(Date.now()), 1); // makes the table
      const watcher = start('watch', url, ...inSchema(), '--poll-every', '60000');
      await watcher.shows(/nobody leads/);
      const worker = observeLeadership(store, { holder: 'worker-1' }).subscribe();
      try {
        await watcher.shows(/worker-1 leads, term 2/); // heard at once, not at the next poll a minute later
        const text = await cli('status', url, ...inSchema());
        expect(text.code).toBe(0);
        expect(text.output).toMatch(/holder +worker-1\nterm +2\nexpires +in \d+\.\d s .*\nlive +yes/);
        const json = await cli('status', url, ...inSchema(), '--json');
        expect(JSON.parse(json.output)).toEqual({
          slot: 0,
          holder: 'worker-1',
          term: 2,
          expiresAt: expect.any(Number),
          expiresIn: expect.any(Number),
          live: true,
          length: 60_000,
          advertised: null,
          standingBy: [],
        });
      } finally {
        worker.unsubscribe();
        await store.settled();
      }
      await watcher.shows(/nobody leads \(worker-1 released/);
      watcher.process.kill('SIGINT');
      expect(await watcher.exited).toBe(0);
    });

    it('hands the leadership to the runner named by handoff', async () => {
      const timing = ['--renew-every', '200', '--expires-after', '1000', '--retry-every', '100'];
      const command = (name: string) => [
        'bash',
        '-c',
        `echo "${name} runs for term $OBSERVE_LEADERSHIP_TERM"; while true; do sleep 0.05; done`,
      ];
      const first = start('run', url, ...inSchema(), '--holder', 'runner-one', ...timing, '--', ...command('one'));
      await first.shows(/one runs for term 1/);
      const second = start('run', url, ...inSchema(), '--holder', 'runner-two', ...timing, '--', ...command('two'));
      await second.shows(/campaigning .* as runner-two/);
      const handoff = await cli('handoff', url, ...inSchema(), '--to', 'runner-two');
      expect(handoff).toEqual({
        code: 0,
        output: expect.stringMatching(/^slot 0: runner-one \(term 1\) handed over to runner-two \(term \d+\) in \d+ ms\n$/),
      });
      await second.shows(/two runs for term \d+/);
      expect(first.output).toContain('lost the lease (handed-off), term 1');
    });

    it('runs the command only in the leader, and hands its lease over on SIGTERM', async () => {
      const timing = ['--renew-every', '200', '--expires-after', '1000', '--retry-every', '100'];
      const command = (name: string) => [
        'bash',
        '-c',
        `echo "${name} runs for term $OBSERVE_LEADERSHIP_TERM"; trap 'echo "${name} stops"; exit 0' TERM; while true; do sleep 0.05; done`,
      ];
      const first = start('run', url, ...inSchema(), ...timing, '--', ...command('one'));
      await first.shows(/one runs for term 1/);
      const second = start('run', url, ...inSchema(), ...timing, '--', ...command('two'));
      await second.shows(/campaigning/);
      expect(second.output).not.toContain('two runs');
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(first.output).toContain('one stops');
      await second.shows(/two runs for term 2/);
    });
  });
});
