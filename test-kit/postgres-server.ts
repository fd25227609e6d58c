/**
 * A throwaway PostgreSQL server for the specs, the chaos harness and the benchmark, so that
 * they need nothing but PostgreSQL's programs on the machine (Debian's `postgresql`
 * package, or any `initdb` on the PATH). PostgreSQL refuses to run as root: as root, the
 * server runs as the `postgres` user (or `nobody`) in a folder it owns.
 *
 * `OBSERVE_LEADERSHIP_TEST_DATABASE_URL` points at an existing server instead; each user of
 * it works in a schema of its own, so nothing else there is touched.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const databaseUrlVariable = 'OBSERVE_LEADERSHIP_TEST_DATABASE_URL';

export interface PostgresServer {
  /** postgres://… of a superuser of the server. */
  readonly url: string;
  /** Stops the server and deletes its folder (nothing for a server given by URL). */
  stop(): void;
}

/** The folder of `initdb`, `pg_ctl` and `postgres`: the PATH's, or the newest Debian version's. */
function findBinaries(): string {
  const onPath = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return join(onPath, '..');
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).filter((name) => existsSync(join(debian, name, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) {
    throw new Error(
      `PostgreSQL's programs (initdb, pg_ctl) were not found: install PostgreSQL (Debian: apt-get install postgresql), ` +
        `or set ${databaseUrlVariable} to the URL of a server to use`,
    );
  }
  return join(debian, newest, 'bin');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** As root, who runs the server instead, and how to run a program as them. */
export function serverUser(): { uid: number; gid: number; run: string[] } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const id = spawnSync('id', [name], { encoding: 'utf8' });
    if (id.status !== 0) continue;
    const uid = Number(/uid=(\d+)/.exec(id.stdout)?.[1]);
    const gid = Number(/gid=(\d+)/.exec(id.stdout)?.[1]);
    return { uid, gid, run: ['runuser', '-u', name, '--'] };
  }
  throw new Error('Running as root, and neither a postgres nor a nobody user exists to run PostgreSQL');
}

/** How a server of this module's own is set up. */
export interface PostgresServerOptions {
  /**
   * The server's `max_connections`. The specs, which run side by side, want more than
   * PostgreSQL's default of 100; the fleet benchmark keeps the default.
   * @default 300
   */
  maxConnections?: number;
  /**
   * Also accept connections from other hosts on 10.0.0.0/8 (network namespaces on veth
   * links), on every address of this one.
   * @default false
   */
  fromNamespaces?: boolean;
  /**
   * Start one even when the environment names a server (whose settings are not this module's to choose).
   * @default false
   */
  own?: boolean;
  /**
   * Variables for the server's processes besides this one's (libfaketime's, for a server
   * whose clock steps); implies `own`.
   * @default none
   */
  environment?: Record<string, string>;
}

/** Starts a server of its own on a free port of 127.0.0.1, or returns the one named by the environment. */
export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const { maxConnections = 300, fromNamespaces = false, environment } = options;
  const own = options.own ?? environment !== undefined;
  const given = process.env[databaseUrlVariable];
  if (given && !own) return { url: given, stop: () => undefined };
  const bin = findBinaries();
  const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-postgres-'));
  const user = serverUser();
  if (user) chownSync(folder, user.uid, user.gid);
  const run = (program: string, args: string[]) => {
    const [command, ...prefix] = [...(user?.run ?? []), join(bin, program)];
    execFileSync(command, [...prefix, ...args], { stdio: 'pipe', cwd: folder, env: { ...process.env, ...environment } });
  };
  const data = join(folder, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'test', '--no-sync', '-E', 'UTF8']);
  if (fromNamespaces) {
    appendFileSync(join(data, 'pg_hba.conf'), 'host all all 10.0.0.0/8 trust\n');
  }
  // Fast and forgetful: a test server needs no durability.
  const listen = fromNamespaces ? '*' : '127.0.0.1';
  const start = (port: number) => {
    rmSync(join(folder, 'log'), { force: true }); // each attempt's own
    const settings = [
      `-p ${port}`,
      `-k ${folder}`,
      `-c listen_addresses=${listen}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      `-c max_connections=${maxConnections}`,
    ];
    run('pg_ctl', ['-D', data, '-o', settings.join(' '), '-l', join(folder, 'log'), '-w', '-t', '60', 'start']);
  };
  // A port found free can be taken by another process before the server binds it (the specs
  // start many servers, PgBouncers and workers at once): then another port, a few times.
  let port = await freePort();
  for (let attempt = 1; ; attempt++) {
    try {
      start(port);
      break;
    } catch (error) {
      const log = readLog(join(folder, 'log'));
      if (attempt >= 5 || !/could not bind .*Address already in use/.test(log)) throw error;
      port = await freePort();
    }
  }
  return {
    url: `postgres://test@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}

function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
