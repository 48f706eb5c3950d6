import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@inbox/service-kit';
import { adminRoutes } from './handlers/admin-routes.js';
import { publicRoutes } from './handlers/public-routes.js';
import { WorkspaceStore } from './store/workspaces.js';

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
        bodyLimit: '128kb',
        start: async () => undefined,
        stop: async () => undefined,
        routes: (app) => {
          app.use(publicRoutes(store, bus));
          app.use(adminRoutes(store, bus, options.adminToken));
        },
      };
    },
  };
}

export { WorkspaceStore };
