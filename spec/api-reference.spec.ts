import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');

// `npm run docs` builds the HTML reference from the doc comments of every public export of
// the three entries (typedoc.json); here with warnings as errors, so that an export, a
// property or a method without documentation, or a link that leads nowhere, fails.
describe('the API reference', () => {
  it('builds with TypeDoc from the source, every export documented', () => {
    const out = mkdtempSync(join(tmpdir(), 'observe-leadership-api-reference-'));
    try {
      const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
      let output = '';
      try {
        output = execFileSync(process.execPath, [typedoc, '--treatWarningsAsErrors', '--out', out], {
          cwd: root,
          encoding: 'utf8',
          env: { ...process.env, NO_COLOR: '1' },
        });
      } catch (error) {
        output = `${(error as { stdout: string }).stdout}${(error as { stderr: string }).stderr}`;
      }
      expect(output).not.toMatch(/warning|error/i);
      expect(existsSync(join(out, 'index.html'))).toBe(true);
      expect(existsSync(join(out, 'functions', 'index.observeLeadership.html'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
