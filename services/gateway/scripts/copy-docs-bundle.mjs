// The docs page's browser bundle goes into dist/ with the build, so that the service image serves /docs
// without the renderer's package (a development dependency whose own dependencies are some 240 MB).
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';

const bundle = createRequire(import.meta.url).resolve('@scalar/api-reference/browser/standalone.js');
const target = new URL('../dist/assets/', import.meta.url);
mkdirSync(target, { recursive: true });
copyFileSync(bundle, new URL('api-reference.js', target));
