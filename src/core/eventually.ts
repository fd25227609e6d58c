/**
 * A value now (SQLite answers synchronously) or later (a database across the network). The
 * campaign handles both, so that it is written once and SQLite keeps its synchronous,
 * virtual-time-testable path.
 */
export type Eventually<T> = T | PromiseLike<T>;

/** Whether an `Eventually` value is still to come. */
export function isPromiseLike<T>(value: Eventually<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * The value if it is here now, else `undefined`: a value still to come is not waited for,
 * and its failure is caught (an unhandled rejection would end the host's process).
 */
export function valueNow<T>(value: Eventually<T>): T | undefined {
  if (!isPromiseLike(value)) return value;
  value.then(undefined, () => undefined);
  return undefined;
}

/** Makes a call whose failure changes nothing (what it does also happens without it): its errors, thrown or later, are dropped. */
export function bestEffort(call: () => Eventually<unknown>): void {
  try {
    valueNow(call());
  } catch {
    // Dropped, as said.
  }
}
