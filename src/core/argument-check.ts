/**
 * The checks behind every argument error of this library, so that all of them read the
 * same way: Expected `renewEvery` to be a whole number of milliseconds from 1 to
 * 2147483647, got `-1` (number).
 *
 * A value of the wrong type gives a `TypeError`; a value of the right type outside what
 * is allowed gives a `RangeError`.
 */

/** Longest delay a Node.js timer honours; longer ones fire at once. */
export const MAX_DELAY = 2 ** 31 - 1;

/** The error for `value` of `name`; `note` says more of the value (that it is a default, say). */
export function argumentError(
  kind: typeof TypeError | typeof RangeError,
  name: string,
  expected: string,
  value: unknown,
  note?: string,
): TypeError | RangeError {
  return new kind(`Expected \`${name}\` to be ${expected}, got ${show(value, note)}`);
}

export function expectInteger(name: string, value: unknown, min: number, max: number): number {
  const expected = `an integer from ${min} to ${max}`;
  if (typeof value !== 'number') throw argumentError(TypeError, name, expected, value);
  if (!Number.isInteger(value) || value < min || value > max) throw argumentError(RangeError, name, expected, value);
  return value;
}

export function expectString(name: string, value: unknown, maxLength: number): string {
  const expected = `a non-empty string of at most ${maxLength} characters`;
  if (typeof value !== 'string') throw argumentError(TypeError, name, expected, value);
  if (value.length === 0 || value.length > maxLength) throw argumentError(RangeError, name, expected, value);
  return value;
}

export function expectObject(name: string, value: unknown, expected = 'an object'): object {
  if (typeof value !== 'object' || value === null) throw argumentError(TypeError, name, expected, value);
  return value;
}

/** `-1` (number), `"30s"` (string), `null` (null), `30000` (number, its default): short enough for one line. */
function show(value: unknown, note?: string): string {
  const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return `\`${shortText(value)}\` (${type}${note === undefined ? '' : `, ${note}`})`;
}

function shortText(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (typeof value === 'object' && value !== null) {
    return Array.isArray(value) ? `[${value.length} items]` : (value.constructor?.name ?? 'Object');
  }
  return typeof value === 'function' ? 'function' : String(value);
}

/** A config object with only the `known` keys: a misspelt option must not be silently ignored. */
export function expectConfig(value: unknown, known: readonly string[]): void {
  expectObject('config', value);
  const unknown = Object.keys(value as object).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    throw argumentError(TypeError, 'config', `an object with only ${known.join(', ')}`, unknown);
  }
}

/** An RxJS `SchedulerLike`, recognised by the two methods this library calls. */
export function expectScheduler(name: string, value: unknown): void {
  const clock = expectObject(name, value, 'a SchedulerLike') as Record<string, unknown>;
  if (typeof clock.now !== 'function' || typeof clock.schedule !== 'function') {
    throw argumentError(TypeError, name, 'a SchedulerLike', value);
  }
}
