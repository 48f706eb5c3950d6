import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { documentPath } from '../scripts/write-openapi.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

it('lints docs/openapi.json with no error and no warning (rules in redocly.yaml)', async () => {
  const redocly = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
  // redocly exits non-zero on errors; the JSON report is on stdout either way.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [redocly, 'lint', documentPath, '--config=redocly.yaml', '--format=json'],
    {
      cwd: root,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  const report = JSON.parse(stdout) as {
    totals: { errors: number; warnings: number };
    problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }>;
  };
  const problems = report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
  expect(problems).toEqual([]);
  expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
});
