/** What `status` tells of a slot: the row as stored, and whether its lease stands now. */
export interface SlotStatus {
  readonly slot: number;
  readonly holder: string | null;
  readonly term: number | null;
  readonly expiresAt: number | null;
  /** Ms until the lease expires, by the clock that wrote it; negative once it has. */
  readonly expiresIn: number | null;
  /**
   * Whether the lease stands now; `null` where one look cannot tell: on PostgreSQL, when
   * the server's clock says the lease ended, or has more left than its length, which a step
   * of that clock also makes it say (candidates take it only once they watched it
   * unchanged for its length).
   */
  readonly live: boolean | null;
  /** What the holder advertises (its `advertise` option); `null` for nothing. Never a Prometheus label (docs/command-line.md). */
  readonly advertised: string | null;
  /** On PostgreSQL, the lease's length as its holder wrote it. */
  readonly length?: number;
  /**
   * The candidates that answered a roll call as followers of the slot, by holder: what
   * `handoff --to` may name. Only those that hear messages about handoffs can answer (see
   * docs/command-line.md). Left out with `--prometheus`, which calls no roll.
   */
  readonly standingBy?: string[];
}
