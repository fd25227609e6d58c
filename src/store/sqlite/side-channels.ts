import { Lease } from '../../core/leadership-event';
import type { ChangeOrigin, HandoffMessage, TenureWatch } from '../lease-store';
import { HandoffMailboxes } from './handoff-mailboxes';
import { SignalFile } from './signal-file';
import { TenureEndpoints } from './tenure-endpoints';

/**
 * Where the processes of one SQLite file hear of a release or an election without reading
 * the database: one signal that every watcher hears. Real: a file beside the database,
 * rewritten at each signal and watched (`SignalFile`).
 */
export interface SignalPort {
  /** Makes the signal watchable (the file, if missing). */
  create(): void;
  signal(): void;
  /**
   * Calls `onSignal` at each signal, and `onGone` once if the watch ends on its own (the
   * file deleted, say; it is watched again at the next operation). `undefined`: nothing to
   * watch now.
   */
  watch(onSignal: () => void, onGone: () => void): { close(): void } | undefined;
}

/**
 * How a tenure proves its end to followers on the same host, and how they wait for that
 * proof. Real: a Unix socket per tenure, which the kernel closes when its process dies
 * (`TenureEndpoints`, endpoint-watch.ts).
 */
export interface EndpointPort {
  /** Opens `lease`'s endpoint, before its tenure commits. */
  openFor(lease: Lease): void;
  /** Closes it, once its holder no longer believes it leads. */
  closeFor(lease: Lease): void;
  /** Removes what a dead holder left of it, once its end was proven. */
  removeLeftover(lease: Lease): void;
  /** Its listening descriptor, while open here (for a process that hands it down). */
  descriptorOf(lease: Lease): number | undefined;
  /** Calls `onEnded` once `lease`'s end is proven; `watching: false` when it cannot be. */
  watch(lease: Lease, onEnded: () => void): TenureWatch;
}

/**
 * Messages about handoffs, between the candidates of every process of the file. Real: sixteen
 * small files, each watched (`HandoffMailboxes`); the candidates of one connection hear at once.
 */
export interface MailboxPort {
  tell(message: HandoffMessage): void;
  /** Every message addressed to `holder` (to every mailbox, for a roll call's address). Returns the way to stop. */
  watch(holder: string, listener: (message: HandoffMessage, origin: ChangeOrigin) => void): () => void;
  /** Watches again whatever watch ended on its own: called at each operation. */
  rewatch(): void;
}

/**
 * The SQLite store's ways to reach the other processes of its file besides the database
 * itself: each a narrow port. In production, files and sockets beside the database
 * ({@link fileSideChannels}); in the simulator, events on its own timeline. A database in
 * memory has no other process: no signal, no endpoints, messages within the connection.
 */
export interface SqliteSideChannels {
  readonly signals?: SignalPort;
  readonly endpoints?: EndpointPort;
  readonly mailboxes: MailboxPort;
}

/** The real side channels of the database file `file` (its canonical path), or of a database in memory (`undefined`). */
export function fileSideChannels(file: string | undefined, isOpen: () => boolean): SqliteSideChannels {
  return {
    signals: file === undefined ? undefined : new SignalFile(file),
    endpoints: file === undefined ? undefined : new TenureEndpoints(file),
    mailboxes: new HandoffMailboxes(file, isOpen),
  };
}
