import type { Lease } from '../../core/leadership-event';
import type { ChangeOrigin, ClockReading, HandoffMessage, Handoffs } from '../lease-store';
import { HandoffListeners } from '../handoff-listeners';
import { handoffMessageOf } from '../handoff-message';
import { toLeadershipError } from './postgres-error';
import type { PostgresRunner } from './postgres-runner';
import { channel, literal, Names, serverNow } from './postgres-statements';

/**
 * Hands the tenure ($1, $2, $3: slot, holder, term) to `$4`: the row becomes its lease of `$5`
 * ms, with a term of its own (the old leader's renewals and fenced work fail from here), which
 * `$4` takes at once as its own row and everybody else only once it ends. Tells everyone
 * (`$6`: the message's start).
 */
const handOverText = ({ table, termSequence }: Names) => `WITH handed AS (UPDATE ${table}
    SET holder = $4, term = nextval(${literal(termSequence)}), expires_at = ${serverNow} + $5, lease_ms = $5
    WHERE slot = $1 AND holder = $2 AND term = $3
    RETURNING slot, holder, term)
  SELECT term, pg_notify('${channel}', $6 || json_build_object('kind', 'handed', 'slot', slot, 'to', holder, 'term', term)::text)
  FROM handed`;

/** Where handoffs go: the store's table, its notifying statement (`tell`), and the start of a message's notification on this table, followed by its JSON (see `HandoffMessage`). */
interface HandoffChannel extends Names {
  readonly tell: string;
  readonly payload: string;
}

/**
 * The `handoffs` capability on PostgreSQL: messages are notifications on the store's channel,
 * which every process that listens hears; a handover writes the slot to its successor for a
 * window, with a term of its own.
 */
export class PostgresHandoffs implements Handoffs {
  /** Who hears of handoffs: every candidate of this store, leaders and followers alike, each for its holder. */
  private readonly listeners = new HandoffListeners({ emptied: () => this.unwanted() });
  private readonly statements: { readonly tell: string; readonly handOver: string; readonly payload: string };

  /** @internal Made by its store; `unwanted` tells it that nobody hears handoffs any more. */
  constructor(
    private readonly runner: PostgresRunner,
    channel: HandoffChannel,
    private readonly unwanted: () => void,
  ) {
    this.statements = { tell: channel.tell, handOver: handOverText(channel), payload: channel.payload };
  }

  /** @internal Whether anybody hears handoffs here (the session must listen). */
  get wanted(): boolean {
    return this.listeners.any;
  }

  /** A notification: it needs no right on the table, only to connect, so it does not wait for the schema. */
  async tell(message: HandoffMessage): Promise<void> {
    const { runner, statements } = this;
    try {
      await runner.listened(); // whoever listens here (handOff, for the successor's message) hears from now on
      await runner.query(statements.tell, [`${statements.payload}${JSON.stringify(message)}`]);
    } catch (error) {
      throw toLeadershipError(error);
    }
  }

  /** Writes the slot to `to` for `window` ms if it still holds `lease`, and tells everyone (see the statement). */
  handOver({ slot, holder, term }: Lease, to: string, _now: ClockReading, window: number): Promise<number | undefined> {
    const { runner, statements } = this;
    return runner.operation(async () => {
      const [row] = await runner.query<{ term: string }>(statements.handOver, [slot, holder, term, to, window, statements.payload]);
      return row === undefined ? undefined : Number(row.term);
    });
  }

  /** Every message addressed to `holder`, for as long as the session listens. Every process hears every message: a notification reaches all. */
  watchHandoffs(holder: string, listener: (message: HandoffMessage, origin: ChangeOrigin) => void): () => void {
    // The session is opened by the next operation (a candidate's first comes at once), after
    // the schema's: then both take the same connection of the pool, one after the other.
    return this.listeners.add(listener, holder);
  }

  /** @internal A message heard on the channel. */
  hear(text: string): void {
    const message = handoffMessageOf(text);
    if (message !== undefined) this.listeners.deliver(message, 'anywhere');
  }
}
