import { createHash } from 'node:crypto';
import { chmodSync, chownSync, lstatSync, Stats, statSync, unlinkSync } from 'node:fs';
import { connect, createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Lease } from '../../core/leadership-event';
import { TenureWatch } from '../lease-store';
import { accessOf, grant } from './sidecar-access';

/**
 * The longest path a Unix socket may have (Linux's `sun_path` holds 108 bytes with the final
 * NUL; macOS's 104). Longer paths get no endpoint: their followers wait for the lease.
 */
const maxSocketPath = process.platform === 'linux' ? 107 : 103;

/**
 * How many probes a follower makes after its connection to a leader closed, while the
 * dying listener is still being torn down (`ECONNRESET`, or a connection that closes before
 * any greeting), before it gives up without proof. The kernel closes a killed process's
 * descriptors within a few ms; this bounds a listener that keeps accepting and closing.
 */
const maxProbes = 1_000;

interface OpenEndpoint {
  readonly lease: Lease;
  readonly server: Server;
  readonly connections: Set<Socket>;
}

/**
 * The endpoints of the tenures held on one SQLite file: how followers on this host learn at
 * once that a leader's process is gone, where otherwise they would wait for its lease.
 *
 * A leader listens, for its tenure only, on a Unix socket beside the database
 * (`<database>-leadership-<hash of slot, term, holder>`), opened before the tenure is
 * committed and closed only once the candidate no longer believes it leads. Standbys
 * connect to it and are greeted with the tenure. The kernel closes every socket of a process
 * that dies, so a follower's connection closes when the leader's process ends, and never
 * while it lives, however paused or stalled it is. The proof of the end is two facts, each
 * waited for: the connection closed, then a probe of the same socket file (the one the
 * follower first reached, same inode) is refused, so nobody listens there any more.
 *
 * An endpoint is trusted only if its file is a socket owned by the database file's owner,
 * in the database's folder (see docs/how-it-works.md: who may write that folder may disturb it). Anything
 * unexpected (no file, a file of another owner, an endpoint never reached, a path too long,
 * a folder that cannot be written) proves nothing: followers then wait for the lease, as
 * if there were no endpoints. Nothing here waits for time: each probe follows the answer
 * to the one before.
 */
export class TenureEndpoints {
  private readonly open = new Map<string, OpenEndpoint>();

  constructor(private readonly database: string) {}

  /** Where `lease`'s endpoint lives, or `undefined` if its path is too long for a socket. */
  pathOf(lease: Lease): string | undefined {
    const hash = createHash('sha256').update(greetingOf(lease)).digest('base64url').slice(0, 16);
    const path = `${this.database}-leadership-${hash}`;
    return Buffer.byteLength(path) <= maxSocketPath ? path : undefined;
  }

  /**
   * Listens for `lease`'s followers, at once (a Unix socket is bound and listens
   * synchronously), so that the endpoint exists before anyone can read the tenure. Best
   * effort: when it cannot, followers wait for the lease.
   */
  openFor(lease: Lease): void {
    // A new tenure of the slot ends every earlier one held through this connection (the same
    // holder taking its own row again, or another candidate of this process after an expiry):
    // nobody may take those over any more, proof or not.
    for (const endpoint of this.open.values()) if (endpoint.lease.slot === lease.slot) this.closeFor(endpoint.lease);
    const path = this.pathOf(lease);
    if (path === undefined) return;
    const greeting = `${greetingOf(lease)}\n`;
    const connections = new Set<Socket>();
    const server = createServer((socket) => {
      connections.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => connections.delete(socket));
      socket.unref();
      socket.resume(); // followers send nothing; whatever comes is dropped
      socket.write(greeting);
    });
    server.on('error', () => undefined);
    // `exclusive`: in a cluster worker, the socket is this process's own, not the primary's.
    server.listen({ path, exclusive: true });
    if (!server.listening) return void server.close();
    server.unref();
    this.open.set(path, { lease, server, connections });
    try {
      // Followers need write permission on the socket to connect: the database's own.
      grant(
        accessOf(this.database),
        (mode) => chmodSync(path, mode),
        (uid, gid) => chownSync(path, uid, gid),
      );
    } catch {
      // Followers that cannot connect wait for the lease.
    }
  }

  /**
   * Stops listening for `lease`'s followers and closes their connections: to be called once
   * this candidate no longer believes it holds `lease`, never before.
   */
  closeFor(lease: Lease): void {
    const path = this.pathOf(lease);
    const endpoint = path === undefined ? undefined : this.open.get(path);
    if (endpoint === undefined) return;
    this.open.delete(path as string);
    endpoint.server.close(); // also removes the socket file
    for (const socket of endpoint.connections) socket.destroy();
  }

  /**
   * The file descriptor of `lease`'s listening socket, while it is open, for a process that
   * must keep the endpoint alive as long as it lives (the command of `observe-leadership run`).
   * Node's servers do not expose it but through their handle.
   */
  descriptorOf(lease: Lease): number | undefined {
    const path = this.pathOf(lease);
    const endpoint = path === undefined ? undefined : this.open.get(path);
    const fd = (endpoint?.server as unknown as { _handle?: { fd?: unknown } } | undefined)?._handle?.fd;
    return typeof fd === 'number' && fd >= 0 ? fd : undefined;
  }

  /**
   * Removes the socket file of a tenure whose end was proven (its listener is gone, so the
   * file is left over from a killed process). Best effort.
   */
  removeLeftover(lease: Lease): void {
    const path = this.pathOf(lease);
    if (path === undefined || this.open.has(path)) return;
    try {
      if (lstatSync(path).isSocket()) unlinkSync(path);
    } catch {
      // Gone already, or not ours to remove.
    }
  }

  /**
   * Connects to `lease`'s endpoint and calls `onEnded` once, if ever, there is proof that
   * the holder no longer holds the tenure: the connection closed, and then nobody listens
   * at that path any more. Either a probe of the very socket file first reached is refused
   * (a killed process's file stays behind), or the file is gone (a listener that is closed,
   * with its tenure or its thread, removes it). Only the holder's end closes the
   * connection; a missing file, a refusal or silence alone prove nothing.
   */
  watch(lease: Lease, onEnded: () => void): TenureWatch {
    warmUp();
    const path = this.pathOf(lease);
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
      const file = this.socketFile(path as string);
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
          const now = this.socketFile(path as string);
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
  private socketFile(path: string): Stats | 'missing' | 'untrusted' {
    let file: Stats;
    try {
      file = lstatSync(path);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'untrusted';
    }
    try {
      return file.isSocket() && file.uid === statSync(this.database).uid ? file : 'untrusted';
    } catch {
      return 'untrusted';
    }
  }
}

function greetingOf({ slot, term, holder }: Lease): string {
  return JSON.stringify({ slot, term, holder });
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
