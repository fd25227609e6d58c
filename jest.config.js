/**
 * Two projects: `unit`, the specs that need no server and no process of their own (virtual
 * time, SQLite in this process; `npm run test:unit`, well under a minute), and
 * `integration`, everything else: real processes, a PostgreSQL server and a PgBouncer
 * started for the run, the built package, the command line, chaos and benchmark runs.
 * `npm test` runs both. A new spec is an integration spec until it is listed here.
 */
const unit = [
  'spec/bad-input.spec.ts',
  'spec/campaign/**/*.spec.ts',
  'spec/chaos/checker.spec.ts',
  'spec/chaos/fault-plan.spec.ts',
  'spec/chaos/history.spec.ts',
  'spec/fenced.spec.ts',
  'spec/health.spec.ts',
  'spec/holds-lease.spec.ts',
  'spec/layers.spec.ts',
  'spec/leadership-config.spec.ts',
  'spec/metrics.spec.ts',
  'spec/observe-leadership.spec.ts',
  'spec/operators/**/*.spec.ts',
  'spec/pacing/**/*.spec.ts',
  'spec/roll-call.spec.ts',
  'spec/sim/simulator.spec.ts',
];

/**
 * What can differ from one runtime to another, beside the unit specs: the SQLite drivers and
 * pg, child processes and the kernel's word on them, timers and the event loop under a
 * lock, the command line, the package as installed, the examples. `npm run test:runtime`
 * runs these alone (`OBSERVE_LEADERSHIP_SUITE=runtime`): CI runs them on Node.js 22, 24 and
 * 26 after the whole suite on the machine's Node.js (.ci/runtimes).
 */
const runtimeSensitive = [
  'spec/store/**/*.spec.ts',
  'spec/observe-leader.spec.ts',
  'spec/bad-input-matrix.processes.spec.ts',
  'spec/observe-leadership.processes.spec.ts',
  'spec/hand-off.spec.ts',
  'spec/early-takeover.processes.spec.ts',
  'spec/locked-database.processes.spec.ts',
  'spec/drivers.processes.spec.ts',
  'spec/cli/**/*.spec.ts',
  'spec/examples.spec.ts',
  'spec/package.spec.ts',
  'spec/package-node-sqlite.spec.ts',
];
const integration = process.env.OBSERVE_LEADERSHIP_SUITE === 'runtime' ? runtimeSensitive : ['spec/**/*.spec.ts'];

/** What both projects share. */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};

/** @type {import('jest').Config} */
module.exports = {
  // Multi-process specs wait for real leases to expire; their waits are generous on purpose.
  testTimeout: 60_000,
  // Most suites wait on processes, not on the CPU: two at a time on CI's two cores (Jest's
  // default is one fewer than the cores, one here).
  maxWorkers: 2,
  testSequencer: '<rootDir>/spec/support/long-first-sequencer.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: unit.map((path) => `<rootDir>/${path}`) },
    {
      ...common,
      displayName: 'integration',
      testMatch: integration.map((path) => `<rootDir>/${path}`),
      // The unit specs, as patterns: a folder of them (`dir/**/*.spec.ts`) ignores the folder.
      testPathIgnorePatterns: [
        '/node_modules/',
        ...unit.map((path) => `<rootDir>/${path.replace(/\*\*\/\*\.spec\.ts$/, '').replace(/\./g, '\\.')}`),
      ],
      // One PostgreSQL server for the run (or the one OBSERVE_LEADERSHIP_TEST_DATABASE_URL names).
      globalSetup: '<rootDir>/spec/support/postgres-global-setup.ts',
      globalTeardown: '<rootDir>/spec/support/postgres-global-teardown.ts',
    },
  ],
};
