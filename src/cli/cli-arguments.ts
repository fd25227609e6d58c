import { parseArgs } from 'node:util';

/** What went wrong, as the process exit code says it (documented in docs/command-line.md). */
export const exitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  noDatabase: 3,
  noTable: 4,
  notDatabase: 5,
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
  readonly options: Map<string, string | boolean>;
  readonly rest: string[];
}

/**
 * Splits `argv` (without node and the script) with `node:util`'s `parseArgs`: `--name
 * value` and `--name=value` for the names in `valued`, `--flag` for those in `flags`, one
 * positional argument (the database), and nothing else; everything after the first `--` is
 * `rest`, untouched (the command `run` starts, with its own options).
 */
export function parseArguments(argv: readonly string[], valued: readonly string[], flags: readonly string[]): ParsedArguments {
  const separator = argv.indexOf('--');
  const own = withNegativeValues(separator >= 0 ? argv.slice(0, separator) : [...argv], valued);
  const options = Object.fromEntries([
    ...valued.map((name) => [name, { type: 'string' as const }]),
    ...flags.map((name) => [name, { type: 'boolean' as const }]),
  ]);
  try {
    const { values, positionals } = parseArgs({ args: own, options, allowPositionals: true, strict: true });
    if (positionals.length > 1) {
      throw new CliError(exitCode.usage, `unexpected argument ${JSON.stringify(positionals[1])}: one database, then options`);
    }
    return {
      positional: positionals,
      options: new Map(Object.entries(values).filter((entry): entry is [string, string | boolean] => entry[1] !== undefined)),
      rest: separator >= 0 ? argv.slice(separator + 1) : [],
    };
  } catch (error) {
    if (error instanceof CliError) throw error;
    // parseArgs's own words ("Unknown option '--frob'", "Option '--slot <value>' argument
    // missing"), up to where it explains '--', which here starts a command.
    throw new CliError(exitCode.usage, (error as Error).message.split('. ')[0]);
  }
}

/**
 * `--slot -1` as `--slot=-1`: parseArgs takes a value that starts with a dash for another
 * option and calls it ambiguous, where the user gave a number, which the option's own check
 * then refuses in our words.
 */
function withNegativeValues(args: string[], valued: readonly string[]): string[] {
  return args.flatMap((arg, i) => {
    const previous = args[i - 1];
    if (/^-\d/.test(arg) && previous?.startsWith('--') && valued.includes(previous.slice(2))) return [];
    const next = args[i + 1];
    return arg.startsWith('--') && valued.includes(arg.slice(2)) && next !== undefined && /^-\d/.test(next) ? [`${arg}=${next}`] : [arg];
  });
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
  const value = typeof text === 'string' && /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    throw new CliError(exitCode.usage, `--${name} must be a whole number from ${min} to ${max}, got ${String(text)}`);
  }
  return value;
}
