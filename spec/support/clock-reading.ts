import { ClockReading } from '../../src/store/lease-store';

/** A reading of one clock for both a store's monotonic and wall time: what a spec passes where it sets the time itself. */
export function at(ms: number): ClockReading {
  return { clock: 'spec', now: ms, wall: ms };
}
