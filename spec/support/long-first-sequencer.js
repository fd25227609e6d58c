// The order Jest runs the suites in: the longest first, so that the last minutes of a run
// are not one long suite on one core while the other core idles. Jest's own order needs
// the timings of a run before (a cache a clean clone has not), and falls back to the
// files' sizes, which put the chaos rounds, small files of 160 s, last.
const { statSync } = require('node:fs');
const { relative } = require('node:path');

/** Suites of over a minute and a half in CI, longest first (their `Time` in `.ci/run`'s log). */
const longest = [
  'spec/chaos/chaos.processes.spec.ts',
  'spec/bench/bench.smoke.spec.ts',
  'spec/sim/planted-bugs.processes.spec.ts',
  'spec/clock-steps.processes.spec.ts',
  'spec/monitoring.spec.ts',
];

class LongFirstSequencer {
  sort(tests) {
    const rank = (test) => {
      const at = longest.indexOf(relative(test.context.config.rootDir, test.path));
      return at === -1 ? longest.length : at;
    };
    const size = (test) => statSync(test.path).size;
    return [...tests].sort((a, b) => rank(a) - rank(b) || size(b) - size(a));
  }

  shard(tests) {
    return tests;
  }

  allFailedTests(tests) {
    return tests;
  }

  cacheResults() {}
}

module.exports = LongFirstSequencer;
