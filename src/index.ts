export { observeLeadership } from './surface/observe-leadership';
export { observeLeader } from './surface/observe-leader';
export { fenced } from './surface/fenced';
export { whileLeader } from './surface/operators/while-leader';
export type { WhileLeaderConfig } from './surface/operators/while-leader';
export type { JobWork, StartJob } from './surface/operators/tenure-jobs';
export { isLeader } from './surface/operators/is-leader';
export { holdsLease } from './surface/holds-lease';
export { handOff } from './surface/hand-off';
export type { HandOffOptions, HandOffResult } from './surface/hand-off';
export { sqliteLeaseStore } from './store/sqlite/sqlite-lease-store';
export type { SqliteLeaseStore } from './store/sqlite/sqlite-lease-store';
export { readClocks } from './core/monotonic-scheduler';
export { LeadershipError } from './core/leadership-error';
export { LockTaken } from './store/lease-store';
export type { LeadershipErrorCode } from './core/leadership-error';
export type { SqliteDatabaseLike } from './store/sqlite/sqlite-database-like';
export type { LeadershipConfig } from './surface/leadership-config';
export type { ObserveLeaderConfig } from './surface/observe-leader';
export type { LeaderState } from './surface/leader-state';
export type {
  ElectedEvent,
  Lease,
  LeadershipErrorEvent,
  LeadershipEvent,
  LostEvent,
  LostReason,
  RenewedEvent,
} from './core/leadership-event';
export type {
  CandidateRecording,
  InstrumentedCandidate,
  InstrumentedWatch,
  InstrumentRecording,
  LeaderInstrument,
  LeaderRecording,
  LeadershipInstrument,
} from './surface/instrument';
export { leaderHealth, leadershipHealth } from './surface/health';
export type {
  CandidateHealth,
  HealthReport,
  LeaderHealth,
  LeaderHealthOptions,
  LeaderHealthReport,
  LeadershipHealth,
  LeadershipHealthOptions,
  WatchHealth,
} from './surface/health';
export type {
  AcquireOptions,
  AcquireResult,
  ChangeOrigin,
  ChangeSignals,
  ClockReading,
  Eventually,
  Fencing,
  FencingCapabilities,
  FencingStore,
  HandoffMessage,
  Handoffs,
  LeaseChange,
  LeaseReader,
  LeaseRecord,
  LeaseStore,
  LeaseTable,
  LeaseView,
  Priorities,
  RenewOptions,
  StandbyPlaces,
  StoreCapabilities,
  TenureProof,
  TenureWatch,
  WatchOptions,
} from './store/lease-store';
