import { beliefSegments, overlappingBeliefs, WorkerRecord } from '../../test-kit/history';

// The multi-process specs and the chaos checker rest on these: they must see an overlap when there is one.
describe('beliefSegments and overlappingBeliefs', () => {
  const record = (at: number, type: string, holder: string, expiresAt?: number): WorkerRecord => ({
    at,
    pid: 1,
    type,
    holder,
    expiresAt,
  });

  it('finds two holders believing at once', () => {
    const a = beliefSegments([record(0, 'elected', 'a', 100), record(50, 'renewed', 'a', 150)]);
    const b = beliefSegments([record(120, 'elected', 'b', 220)]);
    expect(overlappingBeliefs([...a, ...b])).toEqual([[a[1], b[0]]]);
  });

  it('ends a belief at lost or unsubscribed, and at the expiry written, whichever comes first', () => {
    const a = beliefSegments([record(0, 'elected', 'a', 100), record(40, 'unsubscribed', 'a')]);
    const b = beliefSegments([record(0, 'elected', 'b', 100), record(30, 'lost', 'b')]);
    expect(a.map(({ end }) => end)).toEqual([40]);
    expect(b.map(({ end }) => end)).toEqual([30]);
    expect(overlappingBeliefs([...a, ...beliefSegments([record(41, 'elected', 'c', 300)])])).toEqual([]);
  });
});
