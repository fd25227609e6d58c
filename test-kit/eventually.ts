/**
 * Waits until `probe` returns (or resolves to) something other than `undefined`, `false`
 * or `null`, and returns it. A condition, never a sleep: the limit is generous and only fails a test whose
 * condition never came.
 */
export async function eventually<T>(
  description: string,
  probe: () => T | undefined | false | null | PromiseLike<T | undefined | false | null>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
