import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { connect, Socket } from 'node:net';

/** A Unix socket of this host bound to a tenure endpoint's path, as /proc/net/unix lists it. */
export interface EndpointSocket {
  readonly inode: number;
  /** `listening`, or `connected`: a follower's connection, as the leader accepted it. */
  readonly state: 'listening' | 'connected' | 'other';
  readonly path: string;
}

/**
 * The sockets of every tenure endpoint of `file` on this host (Linux): the leader's listening
 * socket, and the connections it accepted, which carry its path. A follower's end of a
 * connection has no path, so the count of `connected` ones is the count of watchers.
 */
export function endpointSockets(file: string): EndpointSocket[] {
  const prefix = `${realpathSync(file)}-leadership-`;
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[7]?.startsWith(prefix))
    .map(([, , , flags, , state, inode, path]) => ({
      inode: Number(inode),
      state: (parseInt(flags, 16) & 0x10000) !== 0 ? 'listening' : state === '03' ? 'connected' : 'other',
      path,
    }));
}

/**
 * How many followers the leaders of `file` have accepted. A connection exists, and is
 * listed, from the follower's `connect`, before the leader accepts it; the kernel accepts
 * it (libuv's `accept`) before the leader's code greets it. A leader that dies before its
 * greeting has proven nothing to that follower: wait for `greetedUpToNow` too before a
 * kill. The listeners' accept queues come from `ss` (iproute2).
 */
export function watcherCount(file: string): number {
  const prefix = `${realpathSync(file)}-leadership-`;
  const connected = endpointSockets(file).filter((socket) => socket.state === 'connected').length;
  const pending = execFileSync('ss', ['-xlnH'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[4]?.startsWith(prefix))
    .reduce((sum, fields) => sum + Number(fields[2]), 0);
  return connected - pending;
}

/**
 * Whether the leader of `file` greets a connection made now, of the caller's own, which it
 * then closes: a leader takes its connections in the order they came and greets each as
 * it takes it, so every follower whose connection came before was greeted by then (for
 * the process that is not instrumented, the command line's runner say). `false` if no
 * endpoint listens, or the connection ends without a word.
 */
export function greetedUpToNow(file: string): Promise<boolean> {
  const socket = connectToLeader(file);
  if (socket === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    socket.on('error', () => resolve(false));
    socket.once('close', () => resolve(false));
    socket.once('data', () => {
      resolve(true);
      socket.destroy();
    });
  });
}

/** A connection of the caller's own to the endpoint that listens for `file`'s leader, if one does. */
export function connectToLeader(file: string): Socket | undefined {
  const listening = endpointSockets(file).find((socket) => socket.state === 'listening');
  return listening === undefined ? undefined : connect(listening.path);
}
