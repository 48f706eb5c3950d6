import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type TlsOptions } from 'node:tls';
import { afterAll, expect, it } from 'vitest';
import { AddressPolicy, guardedAgent, request } from '../src/index.js';

// A self-signed pair made for these tests only: openssl req -x509 -newkey rsa:2048 -nodes -days 36500
// -subj /CN=localhost. The agent does not trust it, so a handshake that got as far as the certificate
// ends with DEPTH_ZERO_SELF_SIGNED_CERT; one refused over its key exchange ends before, with an alert.
const key = readFileSync(new URL('./fixtures/self-signed-key.pem', import.meta.url));
const cert = readFileSync(new URL('./fixtures/self-signed-cert.pem', import.meta.url));

const agent = guardedAgent(AddressPolicy.fromSetting('127.0.0.0/8'), 2_000);
const servers: Server[] = [];
afterAll(async () => {
  for (const server of servers) server.close();
  await agent.close();
});

/** What a call through the agent to a TLS server with these settings ends with: the TLS error's code. */
async function handshake(options: TlsOptions): Promise<string> {
  const server = createServer({ key, cert, ...options }, (socket) => socket.end());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await request(`https://127.0.0.1:${port}/`, { method: 'GET', dispatcher: agent });
    return 'answered';
  } catch (error) {
    return String((error as { code?: string }).code);
  }
}

it("refuses a server's finite-field key exchange, whose cost the server chooses", async () => {
  // TLS 1.2's DHE, with a group the server picks (here OpenSSL's own; a hostile one sends 10,000 bits).
  expect(
    await handshake({ ciphers: 'DHE-RSA-AES128-GCM-SHA256', maxVersion: 'TLSv1.2', dhparam: 'auto' }),
  ).toBe('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
  // TLS 1.3 with only a finite-field group.
  expect(await handshake({ ecdhCurve: 'ffdhe8192', minVersion: 'TLSv1.3' })).toBe(
    'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
  );
});

it('still agrees a key with servers that offer elliptic curves, on TLS 1.2 and 1.3', async () => {
  expect(await handshake({ maxVersion: 'TLSv1.2' })).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
  expect(await handshake({ minVersion: 'TLSv1.3' })).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
});
