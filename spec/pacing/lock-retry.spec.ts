import { LockRetry } from '../../src/pacing/lock-retry';

describe('LockRetry', () => {
  it('draws each step within a width that doubles from 2 to 32 ms', () => {
    const widest = new LockRetry(() => 0.999);
    expect(Array.from({ length: 7 }, () => widest.next(0))).toEqual([2, 4, 8, 16, 32, 32, 32]);
    const narrowest = new LockRetry(() => 0);
    expect(Array.from({ length: 3 }, () => narrowest.next(0))).toEqual([1, 1, 1]);
  });

  it('gives steps while the episode is within its budget, then ends it, and starts afresh after', () => {
    const retry = new LockRetry(() => 0);
    expect(retry.nextWithin(100, 50)).toBe(1);
    expect(retry.nextWithin(149, 50)).toBe(1);
    expect(retry.nextWithin(150, 50)).toBeUndefined();
    expect(retry.lockedFor(150)).toBe(0);
    expect(retry.nextWithin(400, 50)).toBe(1); // a new episode, from 400
    expect(retry.lockedFor(420)).toBe(20);
  });
});
