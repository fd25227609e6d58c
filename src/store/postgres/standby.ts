import type { ClockReading, StandbyPlaces } from '../lease-store';
import type { StoreSession } from './postgres-session';

/** The key of `holder`'s standby place of `slot` among the places a store holds. */
const placeOf = (slot: number, holder: string) => `${slot} ${holder}`;

/** The statements of standby places, on the session: `standBy` takes the first free of `$2` advisory locks of the slot. */
const statements = {
  standBy: `SELECT place FROM generate_series(0, $2::int - 1) AS place WHERE pg_try_advisory_lock(hashtext($1), place) LIMIT 1`,
  leaveStandby: `SELECT pg_advisory_unlock(hashtext($1), $2::int)`,
};

/**
 * A store's standby places: session advisory locks on the store's session
 * (`pg_try_advisory_lock`, never waiting), which the server lets go when the session ends,
 * however it ends. Only standbys listen for releases, so that a release wakes a few
 * processes, not every follower of the fleet. Where notifications cannot work (PgBouncer's
 * transaction mode), there are no places: every follower polls as a standby would.
 */
export class StandbyLocks {
  /** Places held on the session, by `slot holder`. */
  private readonly places = new Map<string, number>();
  /** How many claims wait for the session, which must stay meanwhile. */
  private seeking = 0;

  constructor(
    private readonly session: StoreSession,
    /** The advisory lock key of a slot's places: this table's, not another's that shares the server. */
    private readonly keyOf: (slot: number) => string,
  ) {}

  /** Whether the session must stay for them: a place is held or sought. */
  get wanted(): boolean {
    return this.places.size > 0 || this.seeking > 0;
  }

  /** The session ended, and its locks with it. */
  forget(): void {
    this.places.clear();
  }

  /** Keeps or takes one of the first `places` places of `slot` for `holder`; whether it holds one now. */
  async claim(slot: number, holder: string, places: number): Promise<boolean> {
    const key = placeOf(slot, holder);
    this.seeking++;
    try {
      const session = await this.session.get();
      if (session === undefined) return true; // nobody can be told: every follower polls
      if (this.places.has(key)) return true;
      const { rows } = await this.session.onTurn(() =>
        session.client.query<{ place: number }>(this.session.config(statements.standBy, [this.keyOf(slot), places])),
      );
      if (rows.length === 0 || this.session.open !== session) return false; // a session gone took its lock with it
      this.places.set(key, rows[0].place);
      return true;
    } finally {
      this.seeking--;
      this.session.stopIfUnwanted();
    }
  }

  /**
   * Gives up `holder`'s place of `slot`: `undefined` if it has none, else the unlock to run
   * (the place counts as given up at once).
   */
  leave(slot: number, holder: string): (() => Promise<void>) | undefined {
    const key = placeOf(slot, holder);
    const place = this.places.get(key);
    const session = this.session.open;
    if (place === undefined || session === undefined) return undefined;
    this.places.delete(key);
    return async () => {
      if (this.session.open === session) {
        await this.session.onTurn(() => session.client.query(this.session.config(statements.leaveStandby, [this.keyOf(slot), place])));
      }
      this.session.stopIfUnwanted();
    };
  }
}

/** The `standby` capability on PostgreSQL: places are session advisory locks (see `StandbyLocks`). */
export class PostgresStandby implements StandbyPlaces {
  /** @internal Made by its store: `operate` runs an operation as the store runs each (see `PostgresLeaseStore.operation`). */
  constructor(
    private readonly locks: StandbyLocks,
    private readonly operate: <T>(run: () => Promise<T>) => Promise<T>,
  ) {}

  /** Keeps or takes one of the first `places` standby places of `slot`. */
  standBy(slot: number, holder: string, _now: ClockReading, _expiresAfter: number, places: number): Promise<boolean> {
    return this.operate(() => this.locks.claim(slot, holder, places));
  }

  /** Gives up `holder`'s standby place of `slot`, if it has one. */
  leaveStandby(slot: number, holder: string): Promise<void> {
    const unlock = this.locks.leave(slot, holder);
    return unlock === undefined ? Promise.resolve() : this.operate(unlock);
  }
}
