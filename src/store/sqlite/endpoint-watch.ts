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
  const watch = new EndpointWatch(database, path ?? '', greetingOf(lease), onEnded);
  if (path === undefined) watch.close();
  else watch.attach();
  return watch;
}

/** One follower's watch of one endpoint (see `watchEndpoint`): a connection at a time, then probes once it closed. */
class EndpointWatch implements TenureWatch {
  private socket: Socket | undefined;
  private active = true;
  /** The socket file reached and trusted, once greeted: the connection to watch was made. */
  private reached: Stats | undefined;
  private probes = 0;

  constructor(
    private readonly database: string,
    private readonly path: string,
    private readonly greeting: string,
    private readonly onEnded: () => void,
  ) {}

  get watching(): boolean {
    return this.active;
  }

  readonly close = (): void => {
    this.active = false;
    this.socket?.destroy();
    this.socket = undefined;
  };

  /** Connects to the endpoint's file, if it is still the one first reached (or the first). */
  readonly attach = (): void => {
    if (!this.active) return;
    const file = socketFile(this.database, this.path);
    if (this.reached !== undefined && file === 'missing') return this.ended();
    if (typeof file === 'string' || (this.reached !== undefined && !sameFile(file, this.reached))) return this.close();
    const connection = connect({ path: this.path });
    this.socket = connection;
    connection.unref();
    connection.setEncoding('utf8');
    let failure: string | undefined;
    this.awaitGreeting(connection, file);
    connection.on('error', (error: NodeJS.ErrnoException) => (failure = error.code));
    connection.once('close', () => this.onClosed(connection, failure));
  };

  /** Trusts the file once the leader's greeting came on `connection`; anything else is somebody else's. */
  private awaitGreeting(connection: Socket, file: Stats): void {
    let received = '';
    const onData = (chunk: string) => {
      received += chunk;
      const end = received.indexOf('\n');
      if (end < 0) return void (received.length > 4 * this.greeting.length && connection.destroy());
      connection.off('data', onData);
      if (received.slice(0, end) !== this.greeting) return this.close(); // somebody else's
      this.reached ??= file;
      this.probes = 0;
    };
    connection.on('data', onData);
  }

  /** The connection closed: proof if nobody listens on the very file reached, else another probe. */
  private onClosed(connection: Socket, failure: string | undefined): void {
    if (!this.active || this.socket !== connection) return;
    this.socket = undefined;
    if (this.reached === undefined) return this.close(); // never reached: nothing to go by
    if (failure === 'ECONNREFUSED') {
      // Nobody listens on the very file the leader made: it is gone.
      const now = socketFile(this.database, this.path);
      return typeof now !== 'string' && sameFile(now, this.reached) ? this.ended() : this.close();
    }
    // The connection closed, or a probe met the listener still being torn down (or the
    // file removed under it): ask again.
    if (++this.probes > maxProbes) return this.close();
    setImmediate(this.attach);
  }

  private ended(): void {
    this.active = false;
    this.onEnded();
  }
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
