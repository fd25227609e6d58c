import { AddressInfo, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy to a server, that a spec can cut as a network does: `cut()` stops carrying
 * bytes either way and leaves every connection open and silent (no reset, no close), and
 * new connections are accepted but go nowhere. `heal()` lets new connections through again.
 */
export interface TcpProxy {
  readonly port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export function startTcpProxy(target: { host: string; port: number }, listenOn = '127.0.0.1'): Promise<TcpProxy> {
  let cut = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (cut) return; // accepted, and silent
    const upstream = new Socket();
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.connect(target.port, target.host);
    // Bytes pass only while the link is up: a cut link drops them, as a dead network would.
    client.on('data', (chunk) => cut || upstream.write(chunk));
    upstream.on('data', (chunk) => cut || client.write(chunk));
    client.on('end', () => cut || upstream.end());
    upstream.on('end', () => cut || client.end());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, listenOn, () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        cut: () => (cut = true),
        heal: () => (cut = false),
        close: () =>
          new Promise<void>((closed) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => closed());
          }),
      }),
    );
  });
}
