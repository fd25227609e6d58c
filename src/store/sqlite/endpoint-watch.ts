import { lstatSync, Stats, statSync } from 'node:fs';
import { connect, createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Lease } from '../../core/leadership-event';
import { TenureWatch } from '../lease-store';
import { endpointPath, greetingOf } from './endpoint-path';

/*
 * A follower's side of a tenure's endpoint (see `TenureEndpoints` for the leader's): the
 * watch that proves the leader's process gone.
 */

/**
 * How many probes a follower makes after its connection to a leader closed, while the
 * dying listener is still being torn down (`ECONNRESET`, or a connection that closes before
 * any greeting), before it gives up without proof. The kernel closes a killed process's
 * descriptors within a few ms; this bounds a listener that keeps accepting and closing.
 */
const maxProbes = 1_000;

/**
 * Connects to `lease`'s endpoint and calls `onEnded` once, if ever, there is proof that
 * the holder no longer holds the tenure: the connection closed, and then nobody listens
 * at that path any more. Either a probe of the very socket file first reached is refused
 * (a killed process's file stays behind), or the file is gone (a listener that is closed,
 * with its tenure or its thread, removes it). Only the holder's end closes the
 * connection; a missing file, a refusal or silence alone prove nothing.
 */
export function watchEndpoint(database: string, lease: Lease, onEnded: () => void): TenureWatch {
  warmUp();
  const path = endpointPath(database, lease);
  const greeting = greetingOf(lease);
  let socket: Socket | undefined;
  let active = path !== undefined;
  /** The socket file reached and trusted, once greeted: the connection to watch was made. */
  let reached: Stats | undefined;
  let probes = 0;

  const giveUp = () => {
    active = false;
    socket?.destroy();
    socket = undefined;
  };
  const ended = () => {
    active = false;
    onEnded();
  };
  const attach = () => {
    if (!active) return;
    const file = socketFile(database, path as string);
    if (reached !== undefined && file === 'missing') return ended();
    if (typeof file === 'string' || (reached !== undefined && !sameFile(file, reached))) return giveUp();
    const connection = connect({ path: path as string });
    socket = connection;
    connection.unref();
    connection.setEncoding('utf8');
    let greeted = false;
    let failure: string | undefined;
    let received = '';
    connection.on('data', (chunk: string) => {
      if (greeted) return;
      received += chunk;
      const end = received.indexOf('\n');
      if (end < 0) return void (received.length > 4 * greeting.length && connection.destroy());
      if (received.slice(0, end) !== greeting) return giveUp(); // somebody else's
      greeted = true;
      reached ??= file;
      probes = 0;
    });
    connection.on('error', (error: NodeJS.ErrnoException) => (failure = error.code));
    connection.once('close', () => {
      if (!active || socket !== connection) return;
      socket = undefined;
      if (reached === undefined) return giveUp(); // never reached: nothing to go by
      if (failure === 'ECONNREFUSED') {
        // Nobody listens on the very file the leader made: it is gone.
        const now = socketFile(database, path as string);
        return typeof now !== 'string' && sameFile(now, reached) ? ended() : giveUp();
      }
      // The connection closed, or a probe met the listener still being torn down (or the
      // file removed under it): ask again.
      if (++probes > maxProbes) return giveUp();
      setImmediate(attach);
    });
  };
  attach();
  return {
    get watching() {
      return active;
    },
    close: giveUp,
  };
}

/** The socket file at `path` if it is one and belongs to the database file's owner; else why not. */
function socketFile(database: string, path: string): Stats | 'missing' | 'untrusted' {
  let file: Stats;
  try {
    file = lstatSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'untrusted';
  }
  try {
    return file.isSocket() && file.uid === statSync(database).uid ? file : 'untrusted';
  } catch {
    return 'untrusted';
  }
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

let warm = false;

/**
 * Runs the code of `openFor` once, on a socket nobody else can reach, the first time this
 * process watches a leader: the first server a Node.js process makes and binds costs some
 * 3 ms of loading and compiling, which would otherwise fall between a takeover's
 * compare-and-set and its commit (the endpoint opens inside the transaction). Best effort.
 */
function warmUp(): void {
  if (warm) return;
  warm = true;
  try {
    const server = createServer(() => undefined);
    server.on('error', () => undefined);
    // Linux's abstract namespace: no file; elsewhere, a path of the temporary folder.
    const name = `observe-leadership-warm-up-${process.pid}-${Math.random().toString(36).slice(2)}`;
    server.listen({ path: process.platform === 'linux' ? `\0${name}` : join(tmpdir(), name), exclusive: true });
    server.close();
  } catch {
    // Only a few ms later at the first election.
  }
}
