import { execFileSync } from 'node:child_process';

/**
 * A network namespace joined to this one by a veth pair, as a second host on a link of its
 * own: processes launched in it reach `hostAddress` (this side) and nothing else. `cut()`
 * takes the link down, so packets are dropped both ways without a word, as when a cable is
 * pulled; `heal()` brings it back. Needs root (CAP_NET_ADMIN), as CI and this machine have.
 */
export interface NetworkNamespace {
  readonly name: string;
  /** The address of this side of the link, where a proxy to the server listens. */
  readonly hostAddress: string;
  /** What runs a program inside the namespace. */
  readonly launcher: string[];
  cut(): void;
  heal(): void;
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

export function networkNamespace(index: number): NetworkNamespace {
  const tag = `${process.pid % 100_000}${String.fromCharCode(97 + index)}`;
  const name = `obl${tag}`;
  const [hostSide, nsSide] = [`ob${tag}h`, `ob${tag}n`];
  const subnet = `10.231.${(process.pid % 50) * 5 + index}`;
  const hostAddress = `${subnet}.1`;
  ip('netns', 'add', name);
  try {
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide);
    ip('link', 'set', nsSide, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('-n', name, 'addr', 'add', `${subnet}.2/30`, 'dev', nsSide);
    ip('-n', name, 'link', 'set', nsSide, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch (error) {
    ip('netns', 'del', name);
    throw error;
  }
  return {
    name,
    hostAddress,
    launcher: ['ip', 'netns', 'exec', name],
    cut: () => ip('link', 'set', hostSide, 'down'),
    heal: () => ip('link', 'set', hostSide, 'up'),
    remove: () => {
      try {
        ip('link', 'del', hostSide);
      } finally {
        ip('netns', 'del', name);
      }
    },
  };
}
