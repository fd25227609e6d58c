/**
 * A throwaway PgBouncer (Debian's `pgbouncer` package) in front of a PostgreSQL server, for
 * the specs, the chaos harness and the benchmark: one process, two databases that reach the
 * same server database, one pooled per transaction and one per session, so that both modes
 * run against the same leases.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serverUser } from './postgres-server';

export const pgbouncerUrlVariable = 'OBSERVE_LEADERSHIP_TEST_PGBOUNCER_URL';

/** How PgBouncer lends server connections to its clients. */
export type PoolMode = 'transaction' | 'session';
export const poolModes: readonly PoolMode[] = ['transaction', 'session'];

export interface PgBouncer {
  /** postgres://… through PgBouncer, in `mode`, to the server's database. */
  url(mode: PoolMode): string;
  stop(): void;
}

/** The URL of `mode` on a PgBouncer whose base URL (database `transaction`) is `base`. */
export function pgbouncerUrl(base: string, mode: PoolMode): string {
  const url = new URL(base);
  url.pathname = `/${mode}`;
  return url.toString();
}

function findPgBouncer(): string {
  const onPath = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  if (existsSync('/usr/sbin/pgbouncer')) return '/usr/sbin/pgbouncer';
  throw new Error(`PgBouncer was not found: install it (Debian: apt-get install pgbouncer), or set ${pgbouncerUrlVariable}`);
}

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts PgBouncer on a free port of 127.0.0.1 in front of the server at `serverUrl`
 * (trusting its clients, as the test server does), or returns the one named by the
 * environment. As root, it runs as the server's user: PgBouncer refuses root.
 */
export async function startPgBouncer(serverUrl: string): Promise<PgBouncer> {
  const given = process.env[pgbouncerUrlVariable];
  if (given) return { url: (mode) => pgbouncerUrl(given, mode), stop: () => undefined };
  const program = findPgBouncer();
  const server = new URL(serverUrl);
  const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-pgbouncer-'));
  const user = serverUser();
  if (user) chownSync(folder, user.uid, user.gid);
  const port = await freePort();
  const name = decodeURIComponent(server.username);
  const target = [
    `host=${server.hostname}`,
    `port=${server.port || 5432}`,
    `dbname=${decodeURIComponent(server.pathname.slice(1)) || 'postgres'}`,
    `user=${name}`,
    ...(server.password ? [`password=${decodeURIComponent(server.password)}`] : []),
  ].join(' ');
  writeFileSync(join(folder, 'users.txt'), `"${name}" ""\n`);
  writeFileSync(
    join(folder, 'pgbouncer.ini'),
    [
      '[databases]',
      ...poolModes.map((mode) => `${mode} = ${target} pool_mode=${mode}`),
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(folder, 'users.txt')}`,
      'max_client_conn = 2000',
      'default_pool_size = 40',
      `logfile = ${join(folder, 'pgbouncer.log')}`,
      `pidfile = ${join(folder, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (user) for (const file of ['users.txt', 'pgbouncer.ini']) chownSync(join(folder, file), user.uid, user.gid);
  const [command, ...prefix] = [...(user?.run ?? []), program];
  execFileSync(command, [...prefix, '-d', join(folder, 'pgbouncer.ini')], { stdio: 'pipe', cwd: folder });
  for (const end = Date.now() + 30_000; !(await reachable(port)); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() > end)
      throw new Error(`PgBouncer did not listen on port ${port}: ${readFileSync(join(folder, 'pgbouncer.log'), 'utf8')}`);
  }
  const base = `postgres://${encodeURIComponent(name)}@127.0.0.1:${port}/transaction`;
  return {
    url: (mode) => pgbouncerUrl(base, mode),
    stop: () => {
      try {
        process.kill(Number(readFileSync(join(folder, 'pgbouncer.pid'), 'utf8')), 'SIGTERM');
      } catch {
        // already gone
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}
