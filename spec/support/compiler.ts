import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/** This repository's TypeScript (5.9, what ts-jest needs) and the newest (7, for the checks of what users compile). */
export const typescript = {
  repository: join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
  newest: join(root, 'node_modules', 'typescript-7', 'bin', 'tsc'),
};

/** The options of a strict TypeScript consumer that compiles for Node.js's own module rules. */
export const strictNode16 = ['--noEmit', '--strict', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022'];

/** What `tsc` says, run in `cwd` with `args`: '' when it compiles. */
export function compilerSays(tsc: string, args: string[], cwd: string): string {
  try {
    return execFileSync(process.execPath, [tsc, ...args], { cwd, encoding: 'utf8' });
  } catch (error) {
    return (error as { stdout: string }).stdout; // the compiler's messages
  }
}
