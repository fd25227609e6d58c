import { performance } from 'node:perf_hooks';
import { readClocks } from 'observe-leadership';

/*
 * What a worker process says, one JSON line on stdout at a time, and the clock it dates
 * each line by: what the specs, the chaos harness and the benchmark read of their workers.
 */

/** This host's CLOCK_MONOTONIC in ms, which a stepped wall clock leaves alone, and every process shares. */
export function monotonicNow(): number {
  // Bun's process.hrtime counts from the process's start: the library's reading is the host's clock there.
  return 'Bun' in globalThis ? readClocks().now : Number(process.hrtime.bigint()) / 1e6;
}

/**
 * One JSON line: `at` by the wall clock (Unix ms, what the ledger and the faults use), and
 * `mono` by the host's monotonic clock, on which beliefs are compared when wall clocks step.
 */
export function report(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ at: Date.now(), mono: monotonicNow(), pid: process.pid, ...record })}\n`);
}

/**
 * For the benchmark: the CPU time used so far (µs) and the event loop's busy time (ms), as
 * libuv counts it (no timer of its own, so that measuring costs nothing).
 */
export function reportUsage(extra: Record<string, unknown> = {}): void {
  const { user, system } = process.cpuUsage();
  const { active, idle } = performance.eventLoopUtilization();
  report({ type: 'usage', cpu: user + system, uptime: process.uptime() * 1000, loopActive: active, loopTotal: active + idle, ...extra });
}
