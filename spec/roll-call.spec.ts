import { lastValueFrom, toArray } from 'rxjs';
import type { ChangeOrigin, Handoffs, HandoffMessage } from '../src';
import { rollCall } from '../src/surface/roll-call';

/**
 * Messages as SQLite's mailbox files carry them at worst: of the answers to one call that come
 * at the same moment, only the last is heard (the last message written wins).
 */
function lossyCandidates(holders: string[]): Handoffs & { calls: Array<HandoffMessage & { kind: 'roll-call' }> } {
  const listeners = new Map<string, (message: HandoffMessage, origin?: ChangeOrigin) => void>();
  const calls: Array<HandoffMessage & { kind: 'roll-call' }> = [];
  return {
    calls,
    handOver: () => undefined,
    watchHandoffs: (holder, listener) => (listeners.set(holder, listener), () => listeners.delete(holder)),
    tell: (message) => {
      if (message.kind !== 'roll-call') return;
      calls.push(message);
      const answering = holders.filter((holder) => (message.to === '' || message.to === holder) && !message.heard?.includes(holder));
      const last = answering.at(-1);
      if (last !== undefined)
        setTimeout(() => listeners.get(message.replyTo)?.({ kind: 'present', slot: message.slot, to: message.replyTo, holder: last }), 1);
    },
  };
}

describe('rollCall', () => {
  it('calls everybody again soon after answers come, naming those heard, until none is left to answer', async () => {
    const holders = ['a', 'b', 'c', 'd', 'e'];
    const candidates = lossyCandidates(holders);
    const answered = await lastValueFrom(rollCall(candidates, 0, '', 300).pipe(toArray()));
    expect(answered.sort()).toEqual(holders);
    // One heard per call here; one more call hears nobody new, and the roll is not called again.
    expect(candidates.calls.map(({ heard }) => heard?.length)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('calls one candidate every 100 ms until it answers, and nobody else', async () => {
    const candidates = lossyCandidates(['a', 'b']);
    const answered = await lastValueFrom(rollCall(candidates, 0, 'b', 150).pipe(toArray()));
    expect(answered).toEqual(['b']);
    expect(candidates.calls.map(({ to }) => to)).toEqual(['b']);
    const silent = lossyCandidates(['a']);
    expect(await lastValueFrom(rollCall(silent, 0, 'b', 250).pipe(toArray()))).toEqual([]);
    expect(silent.calls.length).toBe(3); // at 0, 100 and 200 ms
  });
});
