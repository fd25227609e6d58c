/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/spec'],
  testMatch: ['**/*.spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // Multi-process specs wait for real leases to expire; their waits are generous on purpose.
  testTimeout: 60_000,
  // Most suites wait on processes, not on the CPU: two at a time on CI's two cores (Jest's
  // default is one fewer than the cores, one here).
  maxWorkers: 2,
  // One PostgreSQL server for the run (or the one OBSERVE_LEADERSHIP_TEST_DATABASE_URL names).
  globalSetup: '<rootDir>/spec/support/postgres-global-setup.ts',
  globalTeardown: '<rootDir>/spec/support/postgres-global-teardown.ts',
};
