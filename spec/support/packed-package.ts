import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = join(__dirname, '..', '..');

/** The package's tarball, and the files npm put in it. */
export interface PackedPackage {
  readonly tarball: string;
  readonly files: string[];
}

/**
 * `npm pack` as from a fresh clone, into `folder`: what git has (committed or not), without
 * dist/ or build/, so that `prepack` must build what ships. This checkout's own build is left
 * alone: other suites run from it meanwhile.
 */
export function packAsFromAFreshClone(folder: string): PackedPackage {
  const clone = join(folder, 'clone');
  const tracked = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  for (const path of tracked.split('\0').filter((path) => path && existsSync(join(root, path)))) {
    mkdirSync(dirname(join(clone, path)), { recursive: true });
    copyFileSync(join(root, path), join(clone, path));
  }
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'));
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--silent', '--pack-destination', folder], { cwd: clone, encoding: 'utf8' }),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return { tarball: join(folder, packed.filename), files: packed.files.map((file) => file.path) };
}
