export { postgresLeaseStore } from './store/postgres/postgres-lease-store';
export type { PostgresLeaseStore } from './store/postgres/postgres-lease-store';
export type { PostgresLeaseStoreConfig } from './store/postgres/postgres-lease-store';
