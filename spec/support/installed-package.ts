import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packAsFromAFreshClone } from './packed-package';

const root = join(__dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The package as a user gets it: its tarball, its files, and a fresh project it is installed in. */
export interface InstalledPackage {
  readonly folder: string;
  readonly project: string;
  readonly tarball: string;
  readonly files: string[];
  /** Deletes all of it. */
  remove(): void;
}

/**
 * `npm pack` as from a fresh clone, installed in a fresh project (`<folder>/consumer`). The
 * package's one dependency comes from npm's cache where it can (`npm ci` put its tarball
 * there, but not always the registry's metadata that an install also reads: a fresh machine
 * has none); the peer dependencies (a native build, for better-sqlite3) and their types are
 * this repository's own, linked in.
 */
export function installedPackage(prefix: string): InstalledPackage {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  const { tarball, files } = packAsFromAFreshClone(folder);
  const project = join(folder, 'consumer');
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  execFileSync(npm, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--legacy-peer-deps', '--no-package-lock'], {
    cwd: project,
    stdio: 'pipe',
  });
  // After the install, which removes what its package.json does not name; one link per
  // package, never a folder of ours that npm could empty.
  mkdirSync(join(project, 'node_modules', '@types'));
  for (const dependency of ['better-sqlite3', 'rxjs', 'pg', '@types/better-sqlite3', '@types/node', '@types/pg']) {
    symlinkSync(join(root, 'node_modules', dependency), join(project, 'node_modules', dependency));
  }
  return { folder, project, tarball, files, remove: () => rmSync(folder, { recursive: true, force: true }) };
}
