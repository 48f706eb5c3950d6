import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting connections and resolves once every in-flight request has been answered. */
  close(): Promise<void>;
}

export function listen(app: Express, port: number, host = '0.0.0.0'): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('error', reject);
    server.once('listening', () => {
      const actual = (server.address() as AddressInfo).port;
      const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
      resolve({
        server,
        port: actual,
        url: `http://${shownHost}:${actual}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Keep-alive connections with no request in flight would otherwise hold close() open.
            server.closeIdleConnections();
          }),
      });
    });
  });
}
