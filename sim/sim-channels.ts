/**
 * The SQLite store's side channels (src/store/sqlite/side-channels.ts) between the simulated
 * processes of one file, as events on the timeline: a signal reaches each watcher, a message
 * each other process, a tenure's end each follower that reached its endpoint, each after a
 * delay drawn from the run's seed, and, as `copies` draws it, lost or delivered twice. A
 * process killed closes its endpoints, as the kernel does.
 */
import { Lease } from '../src/core/leadership-event';
import { HandoffListeners } from '../src/store/handoff-listeners';
import type { TenureWatch } from '../src/store/lease-store';
import type { SqliteSideChannels } from '../src/store/sqlite/side-channels';
import type { SimProcessClock, Timeline } from './timeline';

interface Endpoint {
  readonly owner: SimProcessClock;
  readonly watchers: Map<() => void, SimProcessClock>;
}

const key = ({ slot, holder, term }: Lease) => `${slot} ${term} ${holder}`;

export class SimChannels {
  private readonly signalWatchers = new Map<() => void, SimProcessClock>();
  private readonly messages: Array<{ owner: SimProcessClock; listeners: HandoffListeners }> = [];
  private readonly endpoints = new Map<string, Endpoint>();

  constructor(
    private readonly timeline: Timeline,
    /** How many times a signal, a message or a proof to `receiver` arrives (0: lost), and how long it takes, drawn at each. */
    private readonly fate: (receiver: SimProcessClock, what: string) => { copies: number; delay: number },
  ) {}

  private send(what: string, run: () => void, receiver: SimProcessClock): void {
    const { copies, delay } = this.fate(receiver, what);
    for (let copy = 0; copy < copies; copy++) this.timeline.at(delay, run, receiver);
  }

  /** The side channels of one process's connection. */
  of(owner: SimProcessClock): SqliteSideChannels {
    const listeners = new HandoffListeners();
    this.messages.push({ owner, listeners });
    return {
      signals: {
        create: () => undefined,
        signal: () => {
          for (const [watcher, watcherOwner] of this.signalWatchers) this.send('signal', watcher, watcherOwner);
        },
        watch: (onSignal) => {
          this.signalWatchers.set(onSignal, owner);
          return { close: () => this.signalWatchers.delete(onSignal) };
        },
      },
      mailboxes: {
        tell: (message) => {
          for (const other of this.messages) {
            if (other.listeners === listeners) other.listeners.deliver(message, 'here');
            // `word`: a message's fate is drawn from this name (see `fateOf`), as the recorded runs' were.
            else this.send(`word ${message.kind}`, () => other.listeners.deliver(message, 'anywhere'), other.owner);
          }
        },
        watch: (holder, listener) => listeners.add(listener, holder),
        rewatch: () => undefined,
      },
      endpoints: {
        openFor: (lease) => void this.endpoints.set(key(lease), { owner, watchers: new Map() }),
        closeFor: (lease) => this.close(key(lease)),
        removeLeftover: () => undefined,
        descriptorOf: () => undefined,
        watch: (lease, onEnded) => this.watch(key(lease), owner, onEnded),
      },
    };
  }

  /** The kernel closes every endpoint of a process that dies. */
  killed(owner: SimProcessClock): void {
    for (const [name, endpoint] of this.endpoints) if (endpoint.owner === owner) this.close(name);
  }

  private close(name: string): void {
    const endpoint = this.endpoints.get(name);
    if (endpoint === undefined) return;
    this.endpoints.delete(name);
    for (const [watcher, follower] of endpoint.watchers) this.send('proof', watcher, follower);
  }

  /** A follower reaches the endpoint if it is open: then its end is proven to it; else nothing is. */
  private watch(name: string, follower: SimProcessClock, onEnded: () => void): TenureWatch {
    const endpoint = this.endpoints.get(name);
    if (endpoint === undefined) return { watching: false, close: () => undefined };
    let watching = true;
    const ended = () => {
      if (!watching) return;
      watching = false;
      onEnded();
    };
    endpoint.watchers.set(ended, follower);
    return {
      get watching() {
        return watching;
      },
      close: () => {
        watching = false;
        endpoint.watchers.delete(ended);
      },
    };
  }
}
