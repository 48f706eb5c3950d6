import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "source" export condition, so tests
// never depend on a prior build. The bundler-only "module" condition is left out: it points some packages
// (@opentelemetry/api) at builds that Node itself cannot load once vitest hands them to Node.
const conditions = ['source', ...defaultServerConditions.filter((condition) => condition !== 'module')];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: [
      'libs/*/src/**/*.test.ts',
      'libs/*/test/**/*.test.ts',
      'services/*/src/**/*.test.ts',
      'services/*/test/**/*.test.ts',
      'runtime/test/**/*.test.ts',
      'e2e/**/*.test.ts',
      'deploy/test/**/*.test.ts',
    ],
    globalSetup: ['libs/testkit/src/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
  },
});
