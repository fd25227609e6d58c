import { join } from 'node:path';
import { SpawnedScript } from './support/spawned-script';

// What `npm start` runs (after its build), so that README's first command cannot rot.
describe('the demo', () => {
  it('runs its three failovers and finds terms increasing and never two leaders', async () => {
    const demo = new SpawnedScript(join(__dirname, '..', 'build', 'demo', 'main.js'), []);
    // It takes about 20 s. Should it ever hang (it did twice in clean-clone CI runs, cause not
    // found), it is stopped before Jest's limit, so that what it printed shows in the failure.
    const stuck = setTimeout(() => demo.process.kill('SIGKILL'), 100_000);
    let lastLineAt = 0;
    demo.process.stdout!.on('data', () => (lastLineAt = Date.now()));
    const { code, output } = await demo.result();
    clearTimeout(stuck);
    // It exits once it said all: no timer of its own keeps it (one kept it 5 s once).
    expect(Date.now() - lastLineAt).toBeLessThan(3_000);
    expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('summary') });
    expect(output).toMatch(/without a leader after a graceful stop: \d+ ms/);
    // A killed leader is replaced before its lease ends; a paused one only after (never a negative figure).
    expect(output).toMatch(/without a leader after a crash: \d+ ms \(\d+ ms before its lease would have expired\)/);
    expect(output).toMatch(
      /without a leader after a pause: \d+ ms \(\d+ ms after its lease expired; \w noticed its loss \d+ ms after resuming\)/,
    );
    expect(output).toContain('each greater than the last');
    expect(output).toContain('two leaders at once: never');
  }, 120_000);
});
