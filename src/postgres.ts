export { postgresLeaseStore, PostgresLeaseStore } from './store/postgres/postgres-lease-store';
export type { PostgresLeaseStoreConfig } from './store/postgres/postgres-lease-store';
