import type { Lease } from '../../core/leadership-event';
import type { TenureProof, TenureWatch } from '../lease-store';
import type { EndpointPort } from './side-channels';

/**
 * The `tenureProof` capability on SQLite: each tenure's endpoint, a socket its holder listens
 * on while it believes (tenure-endpoints.ts): a follower on the same host that finds it gone
 * knows the belief is over (the kernel closes it when the process dies). None in memory.
 */
export class SqliteTenureProof implements TenureProof {
  /** @internal Made by its store. */
  constructor(private readonly endpoints: EndpointPort | undefined) {}

  endTenure(lease: Lease): void {
    this.endpoints?.closeFor(lease);
  }

  /** The listening socket of `lease`'s endpoint, while this candidate holds it (see TenureEndpoints). */
  endpointDescriptor(lease: Lease): number | undefined {
    return this.endpoints?.descriptorOf(lease);
  }

  watchTenure(lease: Lease, onEnded: () => void): TenureWatch {
    return this.endpoints?.watch(lease, onEnded) ?? { watching: false, close: () => undefined };
  }
}
