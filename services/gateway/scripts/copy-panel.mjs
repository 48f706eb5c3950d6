// The panel's build goes into dist/panel with the gateway's build, so that the service image serves /panel
// without the panel's package or its dependencies (turbo.json builds @inbox/panel before the gateway).
import { cpSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const built = join(dirname(createRequire(import.meta.url).resolve('@inbox/panel/package.json')), 'dist');
if (!existsSync(join(built, 'index.html'))) {
  console.error(
    `copy-panel: ${built} holds no build; run \`npm run build\` (turbo builds @inbox/panel first)`,
  );
  process.exit(1);
}
const target = fileURLToPath(new URL('../dist/panel', import.meta.url));
rmSync(target, { recursive: true, force: true });
cpSync(built, target, { recursive: true });
