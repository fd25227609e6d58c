/** What went wrong, as the process exit code says it (documented in docs/command-line.md). */
export const exitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  noDatabase: 3,
  noTable: 4,
} as const;

/** An error the CLI reports in one line, exiting with `code`. */
export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A command line split into its positional arguments, its `--options`, and what follows `--`. */
export interface ParsedArguments {
  readonly positional: string[];
  readonly options: Map<string, string | true>;
  readonly rest: string[];
}

/**
 * Splits `argv` (without node and the script): `--name value`, `--name=value`, and `--flag`
 * for the names in `flags`; everything after `--` is `rest`, untouched.
 */
export function parseArguments(argv: readonly string[], valued: readonly string[], flags: readonly string[]): ParsedArguments {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  const separator = argv.indexOf('--');
  const own = separator >= 0 ? argv.slice(0, separator) : argv;
  for (let i = 0; i < own.length; i++) {
    const argument = own[i];
    if (!argument.startsWith('--')) {
      positional.push(argument);
      continue;
    }
    const [name, inline] = argument.slice(2).split(/=(.*)/s, 2);
    if (flags.includes(name) && inline === undefined) {
      options.set(name, true);
    } else if (valued.includes(name)) {
      const value = inline ?? own[++i];
      if (value === undefined) throw new CliError(exitCode.usage, `--${name} needs a value`);
      options.set(name, value);
    } else {
      throw new CliError(exitCode.usage, `unknown option --${name}`);
    }
  }
  return { positional, options, rest: separator >= 0 ? argv.slice(separator + 1) : [] };
}

/** The option `name` as a whole number from `min` to `max`, or `fallback` when absent. */
export function integerOption(
  parsed: ParsedArguments,
  name: string,
  fallback: number | undefined,
  min: number,
  max: number,
): number | undefined {
  const text = parsed.options.get(name);
  if (text === undefined) return fallback;
  const value = typeof text === 'string' && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    throw new CliError(exitCode.usage, `--${name} must be a whole number from ${min} to ${max}, got ${String(text)}`);
  }
  return value;
}
