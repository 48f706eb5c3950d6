import { type HostedService, hostService } from '@inbox/service-kit';
import { createDatabase, uniquePrefix } from '@inbox/testkit';
import { inject } from 'vitest';
import { type GatewayOptions, gatewayService } from '../src/index.js';

/** A gateway alone on a loopback port, over the run's NATS and a fresh database of its own. */
export async function hostGateway(options: GatewayOptions): Promise<HostedService> {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  return hostService(gatewayService(options), {
    databaseUrl: await createDatabase(postgresAdminUrl),
    busUrl: natsUrl,
    busPrefix: uniquePrefix(),
    port: 0,
    host: '127.0.0.1',
    logLevel: 'silent',
  });
}
