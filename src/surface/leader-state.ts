/** Who holds a slot, as an observer sees it at one moment. */
export interface LeaderState {
  /** Which election. */
  readonly slot: number;
  /** The leader: the holder of a lease that has not expired; `null` when nobody leads. */
  readonly holder: string | null;
  /** The leader's term; `null` when nobody leads. */
  readonly term: number | null;
  /**
   * When the leader's lease ends unless it renews (Unix ms, as stored: on PostgreSQL, by
   * the server's clock); `null` when nobody leads.
   */
  readonly expiresAt: number | null;
  /**
   * What the leader advertises to followers (its `advertise` option: a URL, say); `null`
   * when nobody leads or it advertises nothing. A leader's change shows at the observer's
   * next look (at most `pollEvery` later); a new leader's, at once.
   */
  readonly advertised: string | null;
}
