import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';

// The panel is served by the gateway under /panel, from files the build writes to dist/. Workspace
// packages (@inbox/contracts, @inbox/sdk) are bundled from their TypeScript sources, so the panel needs
// no prior build of them. Nothing is loaded from elsewhere: no CDN, no web font, no telemetry.
export default defineConfig({
  base: '/panel/',
  plugins: [react()],
  resolve: { conditions: ['source', ...defaultClientConditions] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Inlined assets would need `data:` in the gateway's Content-Security-Policy.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  // `npm run dev -w @inbox/panel` against a gateway on its default port.
  server: { proxy: { '/admin': 'http://127.0.0.1:8080', '/api': 'http://127.0.0.1:8080' } },
});
