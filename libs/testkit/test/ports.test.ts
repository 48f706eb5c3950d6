import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { firstEphemeralPort, freePort } from '../src/ports.js';

it('hands out distinct free ports below the range the kernel gives outgoing connections', async () => {
  const ports: number[] = [];
  for (let i = 0; i < 20; i++) ports.push(await freePort());
  expect(new Set(ports).size).toBe(20);
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(firstEphemeralPort);
  }
  // Each is free to listen on.
  const servers = await Promise.all(
    ports.map(
      (port) =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(port, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});
