// One line per runtime, from what each run left in RESULTS: Jest's --json output of every
// Node.js run (node-machine.json for this machine's, node-<version>.json for the others) and
// Bun's own counts (bun.json, from spec/bun.processes.spec.ts); then the failed tests. Exits
// 1 if any run failed or left nothing.
//   node .ci/summary.js RESULTS MACHINE_NODE_VERSION
'use strict';
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const [results, machineVersion] = process.argv.slice(2);
const read = (name) => (existsSync(join(results, name)) ? JSON.parse(readFileSync(join(results, name), 'utf8')) : undefined);
const list = existsSync(join(results, 'runtimes', 'list')) ? readFileSync(join(results, 'runtimes', 'list'), 'utf8') : '';
const runs = [
  { label: `Node.js ${machineVersion.replace(/^v/, '')}, npm test (the whole suite)`, file: 'node-machine.json' },
  ...list
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0])
    .map((version) => ({ label: `Node.js ${version}, npm run test:runtime`, file: `node-${version}.json` })),
];

let failed = false;
const failures = [];
console.log('\nsummary');
for (const { label, file } of runs) {
  const jest = read(file);
  if (jest === undefined) {
    failed = true;
    console.log(`  ${label}: no result (it did not run to its end: see above)`);
    continue;
  }
  const line = `${jest.numPassedTests} passed, ${jest.numFailedTests} failed, in ${jest.numTotalTestSuites} suites`;
  const broken = jest.testResults.filter((suite) => suite.status !== 'passed');
  failed ||= !jest.success;
  console.log(`  ${label}: ${line}${jest.success ? '' : ', FAILED'}`);
  for (const suite of broken) {
    const names = suite.assertionResults.filter((test) => test.status === 'failed').map((test) => test.fullName);
    const spec = suite.name.slice(suite.name.lastIndexOf('/spec/') + 1);
    failures.push(`${label}: ${spec}: ${names.length > 0 ? names.join('; ') : (suite.message ?? '').trim().split('\n')[0]}`);
  }
}
const bun = read('bun.json');
if (bun === undefined) {
  failed = true;
  console.log('  Bun: no result (spec/bun.processes.spec.ts did not report)');
} else {
  failed ||= bun.fail > 0;
  console.log(`  Bun ${bun.version}, bun test spec/bun: ${bun.pass} passed, ${bun.fail} failed`);
}
for (const failure of failures) console.log(`  failed: ${failure}`);
process.exitCode = failed ? 1 : 0;
