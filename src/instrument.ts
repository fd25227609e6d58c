import type { LeadershipEvent } from './leadership-event';
import type { LeaderState } from './observe-leader';
import { argumentError } from './argument-check';

/** What an instrument records of one subscription: each value it emits, then its end. */
export interface InstrumentRecording<T> {
  record(value: T): void;
  /** The subscription ended (unsubscribed, or the stream ended): stop reporting it. */
  end(): void;
}

/**
 * Records what candidates emit, for the `instrument` option of `observeLeadership`: told of
 * each subscription's slot and holder when it starts, so that a follower that has emitted
 * nothing yet is reported too. `leadershipMetrics` of `observe-leadership/metrics` is one,
 * through OpenTelemetry; this entry never loads OpenTelemetry itself.
 */
export interface LeadershipInstrument {
  begin(candidate: { readonly slot: number; readonly holder: string; readonly expiresAfter: number }): InstrumentRecording<LeadershipEvent>;
}

/** The same for the `instrument` option of `observeLeader` (`leaderMetrics` is one). */
export interface LeaderInstrument {
  begin(watch: { readonly slot: number }): InstrumentRecording<LeaderState>;
}

/** Checks an `instrument` option: an object with a `begin` method. */
export function expectInstrument(value: unknown): void {
  if (value !== undefined && typeof (value as { begin?: unknown } | null)?.begin !== 'function') {
    throw argumentError(TypeError, 'instrument', 'an instrument with a begin method (leadershipMetrics() of observe-leadership/metrics, say)', value);
  }
}
