import { createHash } from 'node:crypto';
import { Lease } from '../../core/leadership-event';

/**
 * The longest path a Unix socket may have (Linux's `sun_path` holds 108 bytes with the final
 * NUL; macOS's 104). Longer paths get no endpoint: their followers wait for the lease.
 */
const maxSocketPath = process.platform === 'linux' ? 107 : 103;

/** What a tenure's endpoint greets its followers with: the tenure itself. */
export function greetingOf({ slot, term, holder }: Lease): string {
  return JSON.stringify({ slot, term, holder });
}

/** Where `lease`'s endpoint beside `database` lives, or `undefined` if its path is too long for a socket. */
export function endpointPath(database: string, lease: Lease): string | undefined {
  const hash = createHash('sha256').update(greetingOf(lease)).digest('base64url').slice(0, 16);
  const path = `${database}-leadership-${hash}`;
  return Buffer.byteLength(path) <= maxSocketPath ? path : undefined;
}
