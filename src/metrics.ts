/** `observe-leadership/metrics`: the OpenTelemetry instruments, apart so that the main entry never loads OpenTelemetry. */
export { leaderMetrics, leadershipMetrics } from './surface/metrics';
export type { LeadershipMetricsOptions } from './surface/metrics';
