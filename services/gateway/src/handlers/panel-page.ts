import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@inbox/service-kit';
import express, { type Response, Router } from 'express';

export const panelPath = '/panel';

/**
 * Where the panel's built files are: the copy the gateway's build puts in dist/panel (the service image,
 * which does not ship the panel's package), else the panel workspace's own dist/ (running from source,
 * where `npm start` and the tests build it first).
 */
export function panelDirectory(): string | undefined {
  const built = fileURLToPath(new URL('../panel', import.meta.url));
  if (existsSync(join(built, 'index.html'))) return built;
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@inbox/panel/package.json')), 'dist');
  } catch {
    return undefined;
  }
}

// The panel talks to this gateway only, and loads nothing from anywhere else: the policy makes that a
// rule the browser enforces, not only a habit of the code.
const securityHeaders = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

const setSecurityHeaders = (res: Response) => res.set(securityHeaders);

/**
 * GET /panel: the panel, a single-page app over the admin API. Its assets have content-hashed names and
 * are cached for good; every other address under /panel is a screen of the app, answered with its page.
 */
export function panelPage(logger: Logger, directory: string | null = panelDirectory() ?? null): Router {
  const router = Router();
  if (!directory) {
    logger.info('no panel: its build is neither in dist/ nor in the panel workspace');
    return router;
  }
  const page = join(directory, 'index.html');
  router.use(panelPath, (_req, res, next) => {
    setSecurityHeaders(res);
    next();
  });
  router.use(
    `${panelPath}/assets`,
    express.static(join(directory, 'assets'), {
      immutable: true,
      maxAge: '365d',
      index: false,
      fallthrough: false,
    }),
  );
  // Files the build copies as they are (the icon); dot files, such as the build's digest, are not served.
  router.use(panelPath, express.static(directory, { index: false, maxAge: '1h' }));
  router.get([panelPath, `${panelPath}/{*screen}`], (_req, res) => {
    if (!existsSync(page)) {
      res
        .status(503)
        .type('text/plain')
        .send('The panel is not built. Run `npm run build` (or `npm start`, which builds it).\n');
      return;
    }
    res.set('Cache-Control', 'no-cache').sendFile(page);
  });
  return router;
}
