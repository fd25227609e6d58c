import { Observable } from 'rxjs';
import { isPromiseLike } from '../core/eventually';
import { rollCallAddress } from '../store/handoff-message';
import { everybody, type Handoffs, type HandoffMessage } from '../store/lease-store';

/**
 * When the roll is called again: soon after new answers (those that came at the same moment
 * to one SQLite mailbox file overwrote one another: the last message written wins, so the others
 * answer the next call, which names those heard), and every so often for one candidate that
 * has not answered yet (a message may be lost).
 */
const callAgainAfterAnswers = 10;
const callAgainEvery = 100;
/** The most of the names heard that one call repeats: a message must fit its mailbox file (4096 bytes). */
const heardBytes = 3_000;

/**
 * Calls the roll of `slot`'s followers, `to` or every one ({@link everybody}), and emits
 * the holder of each that answers, once, until `within` ms have passed. The roll is called
 * again while it may bring someone new: for all, 10 ms after answers came in; for one,
 * every 100 ms until it answers. Only candidates that hear messages about handoffs can
 * answer, and only while they run: the original worker, a store without the `handoffs`
 * capability, a PostgreSQL connection behind a pooler that lends connections per
 * transaction (which cannot `LISTEN`), and a process paused or stalled at that moment are
 * never present.
 */
export function rollCall(handoffs: Handoffs, slot: number, to: string, within: number): Observable<string> {
  return new Observable<string>((subscriber) => {
    const replyTo = rollCallAddress();
    const heard: string[] = [];
    let again: ReturnType<typeof setTimeout> | undefined;
    const call = () => {
      const message: HandoffMessage = { kind: 'roll-call', slot, to, replyTo, heard: namesThatFit(heard) };
      try {
        const told = handoffs.tell(message);
        if (isPromiseLike(told)) told.then(undefined, (error: unknown) => subscriber.error(error));
      } catch (error) {
        subscriber.error(error);
      }
      // All: again once answers came in (below). One: again until it answers.
      if (to !== everybody) again = setTimeout(call, callAgainEvery);
    };
    // Listening before the call: an answer may come from this very connection, at once.
    const stop = handoffs.watchHandoffs(replyTo, (message) => {
      if (message.kind !== 'present' || message.slot !== slot || message.to !== replyTo || heard.includes(message.holder)) return;
      heard.push(message.holder);
      subscriber.next(message.holder);
      clearTimeout(again);
      again = to === everybody ? setTimeout(call, callAgainAfterAnswers) : undefined;
    });
    call();
    const timer = setTimeout(() => subscriber.complete(), within);
    return () => {
      stop();
      clearTimeout(again);
      clearTimeout(timer);
    };
  });
}

/** The first of `names` that fit a message's room for them; those left out answer again, which does no harm. */
function namesThatFit(names: readonly string[]): string[] {
  const fitting: string[] = [];
  let bytes = 0;
  for (const name of names) {
    bytes += Buffer.byteLength(JSON.stringify(name)) + 1;
    if (bytes > heardBytes) break;
    fitting.push(name);
  }
  return fitting;
}
