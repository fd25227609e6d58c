import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Subscription } from 'rxjs';
import { handOff, LeadershipEvent, observeLeadership } from '../../../src';
import { HandoffListeners } from '../../../src/store/handoff-listeners';
import { MailboxPort, SignalPort, SqliteSideChannels } from '../../../src/store/sqlite/side-channels';
import { SqliteLeaseStore } from '../../../src/store/sqlite/sqlite-lease-store';
import { eventually } from '../../../test-kit/eventually';
import { temporaryDatabase, TemporaryDatabase } from '../../support/temporary-database';

/**
 * Side channels of the processes of one file, in this process: what a simulator gives the
 * store in place of the files and sockets beside the database. Messages go to every connection
 * but their sender's, which hears its own at once (as `HandoffMailboxes` does).
 */
function channelBus() {
  const signalWatchers = new Set<() => void>();
  const connections: HandoffListeners[] = [];
  const heard = { signals: 0, messages: [] as string[] };
  const channelsOf = (): SqliteSideChannels => {
    const messages = new HandoffListeners();
    connections.push(messages);
    const signals: SignalPort = {
      create: () => undefined,
      signal: () => {
        heard.signals++;
        for (const watcher of signalWatchers) watcher();
      },
      watch: (onSignal) => {
        signalWatchers.add(onSignal);
        return { close: () => signalWatchers.delete(onSignal) };
      },
    };
    const mailboxes: MailboxPort = {
      tell: (message) => {
        heard.messages.push(message.kind);
        for (const connection of connections) connection.deliver(message, connection === messages ? 'here' : 'anywhere');
      },
      watch: (holder, listener) => messages.add(listener, holder),
      rewatch: () => undefined,
    };
    return { signals, mailboxes };
  };
  return { channelsOf, heard, watching: () => signalWatchers.size };
}

describe('the SQLite store through side channels of its own (the ports a simulator drives)', () => {
  let database: TemporaryDatabase;
  const subscriptions: Subscription[] = [];
  beforeEach(() => (database = temporaryDatabase()));
  afterEach(() => {
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    subscriptions.length = 0;
    database.remove();
  });

  const candidate = (store: SqliteLeaseStore, holder: string) => {
    const events: LeadershipEvent[] = [];
    // A lease of a minute: a follower that takes the slot within seconds heard of its release.
    const subscription = observeLeadership(store, { holder, renewEvery: 20_000, expiresAfter: 60_000, retryEvery: 30_000 }).subscribe(
      (event) => events.push(event),
    );
    subscriptions.push(subscription);
    return { events, subscription, elected: () => events.some((event) => event.type === 'elected') };
  };

  it('signals a release through the signal port, and touches no file beside the database', async () => {
    const bus = channelBus();
    const first = candidate(new SqliteLeaseStore(database.open(), bus.channelsOf()), 'first');
    await eventually('the first elected', first.elected);
    const watchingBefore = bus.watching();
    const second = candidate(new SqliteLeaseStore(database.open(), bus.channelsOf()), 'second');
    await eventually('the second following, watching for changes', () => bus.watching() > watchingBefore);
    const signalsBefore = bus.heard.signals;
    first.subscription.unsubscribe();
    await eventually('the second elected, woken by the signal', second.elected, { timeoutMs: 5_000 });
    expect(bus.heard.signals).toBeGreaterThan(signalsBefore);
    const beside = readdirSync(dirname(database.file)).filter((name) => name.includes('leadership'));
    expect(beside).toEqual([]);
  });

  it('hands off through the mailbox port: the roll call, its answer and the message to the successor', async () => {
    const bus = channelBus();
    const leader = candidate(new SqliteLeaseStore(database.open(), bus.channelsOf()), 'leader');
    await eventually('the leader elected', leader.elected);
    const watchingBefore = bus.watching();
    const successor = candidate(new SqliteLeaseStore(database.open(), bus.channelsOf()), 'successor');
    await eventually('the successor following, watching for changes', () => bus.watching() > watchingBefore);
    const asker = new SqliteLeaseStore(database.open(), bus.channelsOf());
    const result = await handOff(asker, { to: 'successor', within: 5_000 });
    expect(result).toMatchObject({ to: { holder: 'successor' } });
    await eventually('the successor elected', successor.elected, { timeoutMs: 5_000 });
    expect(bus.heard.messages).toEqual(expect.arrayContaining(['roll-call', 'present', 'handed']));
  });
});
