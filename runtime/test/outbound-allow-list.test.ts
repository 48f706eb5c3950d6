import { describe, expect, it } from 'vitest';
import { type StackConfig, serviceProcessSpecs } from '../src/distributed.js';
import { readSettings } from '../src/settings.js';

const ports = { gateway: 1, connector: 2, messaging: 3, pipeline: 4, dispatcher: 5, sandbox: 6 };
const stack: StackConfig = {
  busUrl: 'nats://127.0.0.1:4222',
  databaseUrl: 'postgres://u:p@127.0.0.1:5432/inbox',
  adminToken: 'a'.repeat(32),
  encryptionKey: Buffer.alloc(32, 7).toString('base64'),
  ports,
};
const envOf = (config: StackConfig, service: string) =>
  serviceProcessSpecs(config).find((spec) => spec.name === service)!.env;

describe('the outbound allow-list in local runs', () => {
  it('lets the connector reach the loopback sandbox when no list was given, and only then', () => {
    expect(envOf(stack, 'provider-connector').OUTBOUND_ALLOWED_CIDRS).toBe('127.0.0.0/8');
    expect(envOf(stack, 'webhook-dispatcher').OUTBOUND_ALLOWED_CIDRS).toBeUndefined();
    expect(
      envOf({ ...stack, ports: { ...ports, sandbox: 0 } }, 'provider-connector').OUTBOUND_ALLOWED_CIDRS,
    ).toBe('');
    const given = { ...stack, outboundAllowedCidrs: '10.0.0.0/8' };
    expect(envOf(given, 'provider-connector').OUTBOUND_ALLOWED_CIDRS).toBe('10.0.0.0/8');
    expect(envOf(given, 'webhook-dispatcher').OUTBOUND_ALLOWED_CIDRS).toBe('10.0.0.0/8');
  });

  it('reads the same defaults for npm start', () => {
    expect(readSettings({})).toMatchObject({
      connectorAllowedCidrs: '127.0.0.0/8',
      dispatcherAllowedCidrs: '',
    });
    expect(readSettings({ SANDBOX: 'off' }).connectorAllowedCidrs).toBe('');
    expect(readSettings({ OUTBOUND_ALLOWED_CIDRS: '10.0.0.0/8' })).toMatchObject({
      connectorAllowedCidrs: '10.0.0.0/8',
      dispatcherAllowedCidrs: '10.0.0.0/8',
    });
    // The deprecated name still reaches the dispatcher, and only the dispatcher, as before.
    expect(readSettings({ WEBHOOK_ALLOWED_CIDRS: '192.168.0.0/16' })).toMatchObject({
      connectorAllowedCidrs: '127.0.0.0/8',
      dispatcherAllowedCidrs: '192.168.0.0/16',
    });
  });
});
