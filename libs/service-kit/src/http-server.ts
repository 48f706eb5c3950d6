import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Slots } from '@inbox/bus';
import type { Express } from 'express';

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /**
   * Stops accepting connections and resolves once every in-flight request has been answered. Keep-alive
   * connections are told to close with their next answer and closed as soon as they are idle; whatever
   * is still open at `graceMs` is cut.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * How long a client may take to send a request, headers and body, before it is answered 408 and its
 * connection closed: Node's own bounds (60 s for the headers, 300 s for the whole request) let a caller
 * trickling bodies hold a connection and its buffered bytes for five minutes each. Half a minute sends a
 * 1 MiB callback at 35 KB/s. The bounds are checked every `checkIntervalMs` (Node: 30 s).
 */
export interface RequestBounds {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  checkIntervalMs: number;
}

export const defaultRequestBounds: RequestBounds = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  checkIntervalMs: 5_000,
};

export function listen(
  app: Express,
  port: number,
  host = '0.0.0.0',
  bounds: RequestBounds = defaultRequestBounds,
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = createServer(
      {
        headersTimeout: bounds.headersTimeoutMs,
        requestTimeout: bounds.requestTimeoutMs,
        connectionsCheckingInterval: bounds.checkIntervalMs,
      },
      app,
    ).listen(port, host);
    let closing = false;
    const inFlight = new Slots<ServerResponse>();
    // While closing, every answer ends its connection, so pooled clients (load balancers) move on.
    const endConnectionAfter = (res: ServerResponse) => {
      if (!res.headersSent) res.setHeader('Connection', 'close');
      res.on('finish', () => server.closeIdleConnections());
    };
    server.on('request', (_req, res: ServerResponse) => {
      if (closing) return endConnectionAfter(res);
      const slot = inFlight.hold(res);
      res.on('close', () => inFlight.release(slot));
    });
    server.once('error', reject);
    server.once('listening', () => {
      const actual = (server.address() as AddressInfo).port;
      const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
      resolve({
        server,
        port: actual,
        url: `http://${shownHost}:${actual}`,
        close: (graceMs = 8_000) =>
          new Promise<void>((done) => {
            closing = true;
            for (const res of inFlight.values()) endConnectionAfter(res);
            const cut = setTimeout(() => server.closeAllConnections(), graceMs);
            cut.unref();
            server.close(() => {
              clearTimeout(cut);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
