import { readFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';

/**
 * The first of the ports the kernel hands out as the local end of outgoing connections (and to a listen
 * on port 0). A port taken from that range for a server that binds it seconds later (RabbitMQ takes ten)
 * can become, meanwhile, the local port of any connection on the machine, a readiness probe's included:
 * RabbitMQ once failed to start in CI with `eaddrinuse`. Linux says the range in /proc; elsewhere the
 * kernels' ranges start at 32768 or above.
 */
export const firstEphemeralPort = ((): number => {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    if (Number.isInteger(first)) return first;
  } catch {
    // Not Linux.
  }
  return 32768;
})();

// Below the well-known and registered ports most machines run, above which the draw is made.
const lowest = 10_000;
// Ports this process handed out: a server may not have bound one yet, so a bind test would not see it.
const handedOut = new Set<number>();

/**
 * A free loopback port below the ephemeral range, drawn at random and checked by binding it; never
 * assumes a default port is free. Where no such range is left (a machine whose ephemeral range starts
 * low), the kernel's pick.
 */
export async function freePort(): Promise<number> {
  for (let draw = 0; draw < 50 && firstEphemeralPort - lowest >= 1_000; draw++) {
    const port = lowest + Math.floor(Math.random() * (firstEphemeralPort - lowest));
    if (handedOut.has(port)) continue;
    if (await listens(port)) {
      handedOut.add(port);
      return port;
    }
  }
  return listens(0);
}

/** Listens on the port and closes again: the port it had, or 0 when it was taken. */
function listens(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', (error: NodeJS.ErrnoException) =>
      port !== 0 && (error.code === 'EADDRINUSE' || error.code === 'EACCES') ? resolve(0) : reject(error),
    );
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export function canConnect(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(500);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, host);
  });
}
