import type { ClockReading, Priorities } from '../lease-store';
import type { PostgresRunner } from './postgres-runner';

/**
 * The `priorities` capability on PostgreSQL: a declaration is a notification, heard by every
 * process that listens (every candidate's does), which keeps it for its length: it needs no
 * right on the table, and nothing is left behind by a process that dies. Behind a pooler that
 * lends connections per transaction nobody hears it: every candidate is equal there.
 */
export class PostgresPriorities implements Priorities {
  /** `highest` answers from the notifications heard: no statement. */
  readonly answersLocally = true;
  /** The priorities heard declared, by `slot holder`, each until when (ms of `performance.now()`) it holds. */
  private readonly declared = new Map<
    string,
    { readonly slot: number; readonly holder: string; readonly priority: number; readonly until: number }
  >();

  /** @internal Made by its store: `tell` is its notifying statement, `payload` the start of a declaration's text on this table. */
  constructor(
    private readonly runner: PostgresRunner,
    private readonly tell: string,
    private readonly payload: string,
  ) {}

  declare(slot: number, holder: string, priority: number, _now: ClockReading, expiresAfter: number): Promise<void> {
    const text = JSON.stringify({ slot, holder, priority, for: expiresAfter });
    return this.runner.operation(async () => void (await this.runner.query(this.tell, [`${this.payload}${text}`])));
  }

  /** The highest priority heard declared for `slot` by another holder, and still held. */
  highest(slot: number, holder: string): number {
    this.forgetExpired();
    let highest = 0;
    for (const declared of this.declared.values()) {
      if (declared.slot === slot && declared.holder !== holder) highest = Math.max(highest, declared.priority);
    }
    return highest;
  }

  /** @internal A declaration heard (see `declare`); anything else is ignored. */
  hear(text: string): void {
    let word: unknown;
    try {
      word = JSON.parse(text);
    } catch {
      return;
    }
    const { slot, holder, priority, for: expiresAfter } = (word ?? {}) as Record<string, unknown>;
    if (typeof slot !== 'number' || typeof holder !== 'string' || typeof priority !== 'number' || typeof expiresAfter !== 'number') return;
    const key = `${slot} ${holder}`;
    this.forgetExpired();
    if (priority > 0 && Number.isFinite(priority))
      this.declared.set(key, { slot, holder, priority, until: performance.now() + expiresAfter });
    else this.declared.delete(key);
  }

  /** Drops the declarations that ran out: at each look and each word, so that a process that only watches keeps none for long. */
  private forgetExpired(): void {
    const now = performance.now();
    for (const [key, declared] of this.declared) if (declared.until < now) this.declared.delete(key);
  }
}
