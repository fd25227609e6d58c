export { observeLeadership } from './observe-leadership';
export { observeLeader } from './observe-leader';
export { fenced } from './fenced';
export { whileLeader } from './operators/while-leader';
export { isLeader } from './operators/is-leader';
export { holdsLease } from './holds-lease';
export { LeadershipError } from './leadership-error';
export type { LeadershipErrorCode } from './leadership-error';
export type { LeadershipConfig } from './leadership-config';
export type { LeaderState, ObserveLeaderConfig } from './observe-leader';
export type { ElectedEvent, Lease, LeadershipErrorEvent, LeadershipEvent, LostEvent, LostReason, RenewedEvent } from './leadership-event';
export type { FencingStore } from './fenced';
export type {
  CandidateRecording,
  InstrumentedCandidate,
  InstrumentedWatch,
  InstrumentRecording,
  LeaderInstrument,
  LeaderRecording,
  LeadershipInstrument,
} from './instrument';
export { leaderHealth, leadershipHealth } from './health';
export type {
  CandidateHealth,
  HealthReport,
  LeaderHealth,
  LeaderHealthOptions,
  LeaderHealthReport,
  LeadershipHealth,
  LeadershipHealthOptions,
  WatchHealth,
} from './health';
export type {
  AcquireOptions,
  AcquireResult,
  ChangeOrigin,
  ClockReading,
  Eventually,
  LeaseChange,
  LeaseReader,
  LeaseRecord,
  LeaseStore,
  LeaseView,
  TenureWatch,
  WatchOptions,
} from './store/lease-store';
