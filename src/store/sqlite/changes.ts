import type { ChangeOrigin, ChangeSignals, LeaseChange } from '../lease-store';
import { ChangeListeners } from '../change-listeners';
import type { SignalPort } from './side-channels';

/**
 * The `changes` capability on SQLite: releases and elections by other processes, heard
 * through the signal file beside the database (none in memory); releases on this connection,
 * at once. Never renewals, which need no watching here (see LeaseView).
 */
export class SqliteChanges implements ChangeSignals {
  private readonly listeners = new ChangeListeners({
    added: () => this.startWatching(),
    emptied: () => this.stopWatching(),
  });
  private watcher: { close(): void } | undefined;

  /** @internal Made by its store; `isOpen` says whether the connection is open (a closed one watches nothing). */
  constructor(
    private readonly signalFile: SignalPort | undefined,
    private readonly isOpen: () => boolean,
  ) {}

  watch(listener: (origin: ChangeOrigin, change: LeaseChange) => void): () => void {
    return this.listeners.add(listener, {});
  }

  isWatching(): boolean {
    return this.watcher !== undefined;
  }

  /** @internal A release on this connection: its candidates hear at once, everybody else through the file. */
  released(): void {
    this.listeners.notify('here');
    this.signalFile?.signal();
  }

  /** @internal An election on this connection: observers elsewhere hear through the file; standbys find it taken. */
  elected(): void {
    this.signalFile?.signal();
  }

  /** @internal Watches again if somebody listens and the watch was lost (tried at each operation). */
  watchIfWanted(): void {
    if (this.listeners.any && this.watcher === undefined) this.startWatching();
  }

  /**
   * Watches the signal file, creating it first if it is missing (on a read-only connection
   * too: it is not the database, and an observer that starts first must hear of the first
   * election); tried again at the next operation if that fails or the file goes.
   */
  private startWatching(): void {
    if (this.watcher !== undefined || this.signalFile === undefined || !this.isOpen()) return;
    this.signalFile.create();
    this.watcher = this.signalFile.watch(
      () => this.listeners.notify('anywhere'),
      () => {
        this.watcher = undefined;
        this.listeners.notify('anywhere');
      },
    );
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}
