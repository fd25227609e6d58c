import { FaultRecord } from '../test-kit/history';
import { monotonicNow } from '../test-kit/worker-report';

/** A moment on both clocks: the wall clock's Unix ms, and the host's monotonic ms. */
export interface Moment {
  readonly at: number;
  readonly mono: number;
}

export function moment(): Moment {
  return { at: Date.now(), mono: monotonicNow() };
}

/** When a fault began (`at`, `mono`), now or at `when`. */
export function began(when: Moment = moment()): Pick<FaultRecord, 'at' | 'mono'> {
  return { at: when.at, mono: when.mono };
}

/** When a fault's effect ended (`until`, `untilMono`), now or at `when`. */
export function ended(when: Moment = moment()): Pick<FaultRecord, 'until' | 'untilMono'> {
  return { until: when.at, untilMono: when.mono };
}
