import type { ClockReading, StandbyPlaces } from '../lease-store';
import type { Operate } from './sqlite-prepared';

/**
 * The `standby` capability on SQLite: places are rows of `worker_leadership_standby`, timed by
 * the wall clock: they only decide who is woken first, never who leads, and a step costs at
 * most a place held for its length by a follower gone.
 */
export class SqliteStandby implements StandbyPlaces {
  /** @internal Made by its store. */
  constructor(private readonly operate: Operate) {}

  standBy(slot: number, holder: string, { wall: now }: ClockReading, expiresAfter: number, places: number): boolean {
    const expiresAt = now + expiresAfter;
    return this.operate((statements) => {
      const taken = statements.standbyRead.all(slot);
      const own = taken.find((place) => place.holder === holder);
      const live = new Set(taken.filter((place) => place.expiresAt >= now).map((place) => place.place));
      const place = own?.place ?? Array.from({ length: places }, (_, index) => index).find((index) => !live.has(index));
      if (place === undefined) return false;
      return statements.standbyClaim.run({ slot, place, holder, now, expiresAt }).changes === 1;
    });
  }

  leaveStandby(slot: number, holder: string): void {
    this.operate((statements) => statements.standbyLeave.run({ slot, holder }));
  }
}
