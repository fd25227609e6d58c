/** How long `eventually` waits, and what its failure says of the state it waited on. */
export interface EventuallyOptions {
  /** @default 30_000 */
  timeoutMs?: number;
  /** Read when it times out, and printed in its message (a spec's events, say). */
  explain?: () => unknown;
}

/**
 * Waits until `probe` returns (or resolves to) something other than `undefined`, `false`
 * or `null`, and returns it. A condition, never a sleep: the limit is generous and only fails a test whose
 * condition never came.
 */
export async function eventually<T>(
  description: string,
  probe: () => T | undefined | false | null | PromiseLike<T | undefined | false | null>,
  options: number | EventuallyOptions = {},
): Promise<T> {
  const { timeoutMs = 30_000, explain } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) {
      const why = explain === undefined ? '' : `; then: ${JSON.stringify(explain(), null, 1)}`;
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
