import { chmodSync, chownSync, lstatSync, unlinkSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { Lease } from '../../core/leadership-event';
import { TenureWatch } from '../lease-store';
import { accessOf, grant } from './sidecar-access';
import { endpointPath, greetingOf } from './endpoint-path';
import { watchEndpoint } from './endpoint-watch';

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
    return endpointPath(this.database, lease);
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

  /** Watches `lease`'s endpoint for proof that its holder's process is gone (see `watchEndpoint`). */
  watch(lease: Lease, onEnded: () => void): TenureWatch {
    return watchEndpoint(this.database, lease, onEnded);
  }
}
