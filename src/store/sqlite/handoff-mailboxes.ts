import type { FSWatcher } from 'node:fs';
import { addresseeOf, handoffMessageOf, isRollCallAddress } from '../handoff-message';
import { HandoffListeners } from '../handoff-listeners';
import { everybody, type ChangeOrigin, type HandoffMessage } from '../lease-store';
import { SignalFile } from './signal-file';

/**
 * How many files beside a database carry messages about handoffs: a message wakes the processes
 * whose candidates' holders share its addressee's file, about one in this many, rather than
 * every process of the file (64 processes woken twice per handoff on 2 cores delayed the two
 * that matter by tens of ms). A fixed number, so that the files never pile up as holders
 * come and go.
 */
const mailboxCount = 16;
const everyMailbox = [...Array(mailboxCount).keys()];

type Listener = (message: HandoffMessage, origin: ChangeOrigin) => void;

interface Mailbox {
  readonly file: SignalFile | undefined;
  watcher: FSWatcher | undefined;
  /** Who hears the messages of this mailbox's holders. */
  readonly listeners: HandoffListeners;
}

/** The mailbox of `holder`: FNV-1a of its UTF-8 bytes, modulo `mailboxCount`. */
export function mailboxOf(holder: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(holder)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % mailboxCount;
}

/**
 * Messages about handoffs among the processes of one SQLite file (see `Handoffs`), each sent to
 * the file of its addressee's mailbox (`<database>-leadership-handoff-<0..15>`), written at
 * one length by `SignalFile`. Candidates of the same connection hear them at once. Best
 * effort, as signals are: a message that does not arrive leaves a request unanswered, or a
 * window unused, never two leaders.
 */
export class HandoffMailboxes {
  private readonly boxes = new Map<number, Mailbox>();

  /** `database`: the file's canonical path, or `undefined` in memory (messages stay in this connection). */
  constructor(
    private readonly database: string | undefined,
    private readonly isOpen: () => boolean,
  ) {}

  /**
   * Sends `message` to its addressee, in this connection and through its mailbox's file; to
   * every mailbox for {@link everybody}. A roll call's answer goes to the mailbox of the
   * candidate that answers (its caller watches them all): answers that come at once then
   * overwrite one another only when their candidates share a mailbox, where the last message
   * written wins.
   */
  tell(message: HandoffMessage): void {
    const addressee = addresseeOf(message);
    const indexes = addressee === everybody ? everyMailbox : [mailboxOf(message.kind === 'present' ? message.holder : addressee)];
    for (const index of indexes) {
      const box = this.box(index);
      box.listeners.deliver(message, 'here');
      box.file?.signal(JSON.stringify(message));
    }
  }

  /** Calls `listener` with every message addressed to `holder`, from every mailbox for a roll call's address. Returns the way to stop. */
  watch(holder: string, listener: Listener): () => void {
    const indexes = isRollCallAddress(holder) ? everyMailbox : [mailboxOf(holder)];
    const removers = indexes.map((index) => {
      const box = this.box(index);
      const remove = box.listeners.add(listener, holder);
      this.watchFile(box);
      return remove;
    });
    return () => removers.forEach((remove) => remove());
  }

  /** Watches again every mailbox whose watch went away (its file deleted, a failed watch): at each operation. */
  rewatch(): void {
    for (const box of this.boxes.values()) if (box.watcher === undefined) this.watchFile(box);
  }

  private box(index: number): Mailbox {
    let box = this.boxes.get(index);
    if (box === undefined) {
      const file = this.database === undefined ? undefined : new SignalFile(this.database, `leadership-handoff-${index}`);
      const emptied: Mailbox = {
        file,
        watcher: undefined,
        listeners: new HandoffListeners({
          emptied: () => {
            emptied.watcher?.close();
            emptied.watcher = undefined;
          },
        }),
      };
      this.boxes.set(index, (box = emptied));
    }
    return box;
  }

  private watchFile(box: Mailbox): void {
    const { file } = box;
    if (box.watcher !== undefined || file === undefined || !box.listeners.any || !this.isOpen()) return;
    file.create();
    box.watcher = file.watch(
      () => {
        const message = handoffMessageOf(file.read() ?? '');
        if (message !== undefined) box.listeners.deliver(message, 'anywhere');
      },
      () => (box.watcher = undefined),
    );
  }
}
