import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@inbox/service-kit';
import { adminRoutes } from './handlers/admin-routes.js';
import { publicRoutes } from './handlers/public-routes.js';
import { WorkspaceStore } from './store/workspaces.js';

const bodyLimit = '128kb';

export interface GatewayOptions {
  adminToken: string;
}

export function gatewayService(options: GatewayOptions): ServiceDefinition {
  return {
    name: 'gateway',
    schema: 'gateway',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus }) => {
      const store = new WorkspaceStore(pool);
      return {
        parseJson: false,
        start: async () => undefined,
        stop: async () => undefined,
        routes: (app) => {
          app.use(publicRoutes(store, bus, bodyLimit));
          app.use(adminRoutes(store, bus, options.adminToken, bodyLimit));
        },
      };
    },
  };
}

export { WorkspaceStore };
