import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@inbox/service-kit';
import { apiReference } from '@scalar/express-api-reference';
import { Router } from 'express';

/** The route table serves the document (GET /openapi.json); the page fetches it from the same gateway. */
const documentPath = '/openapi.json';
const bundlePath = '/docs/api-reference.js';

/**
 * The renderer's browser bundle: the copy the build puts beside dist/ (service images, which do not ship
 * the renderer's package and its 240 MB of dependencies), else the installed package (running from source).
 */
function rendererBundle(): string | undefined {
  const built = fileURLToPath(new URL('../assets/api-reference.js', import.meta.url));
  if (existsSync(built)) return built;
  try {
    return createRequire(import.meta.url).resolve('@scalar/api-reference/browser/standalone.js');
  } catch {
    return undefined;
  }
}

/**
 * GET /docs: the OpenAPI document as a page people read and try calls from (Scalar's API reference),
 * calls going to this same gateway. The page loads nothing from anywhere else: its script is served
 * from node_modules, and it asks for no web fonts, sends no telemetry and has no AI agent.
 */
export function docsPage(logger: Logger): Router {
  const router = Router();
  const bundle = rendererBundle();
  if (!bundle) {
    logger.info('no docs page: the renderer bundle is neither built into dist/ nor installed');
    return router;
  }
  router.get(
    '/docs',
    apiReference({
      pageTitle: 'Messaging Inbox API',
      url: documentPath,
      cdn: bundlePath,
      withDefaultFonts: false,
      telemetry: false,
      // Its AI agent would ask Scalar's servers for documents as soon as the page opens.
      agent: { disabled: true },
      showDeveloperTools: 'never',
    }),
  );
  router.get(bundlePath, (_req, res) => res.sendFile(bundle, { maxAge: '1h' }));
  return router;
}
