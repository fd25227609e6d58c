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
}
