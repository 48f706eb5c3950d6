import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@inbox/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'inbox-stop-test-'));
// As root the database runs as the postgres user, which must be able to enter it.
chmodSync(scratch, 0o755);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Processes whose command line names a path under `dir` (the embedded database's data folder). */
function processesUnder(dir: string): string[] {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(dir));
}

describe('npm start stopped with Ctrl-C', () => {
  it('drains the services, stops the embedded Postgres last, and prints only one line', async () => {
    const [gateway, connector, sandbox] = await Promise.all([freePort(), freePort(), freePort()]);
    // Its own process group, as a terminal's foreground job, so Ctrl-C can be sent the way a terminal does.
    const child = spawn(
      process.execPath,
      ['--conditions=source', '--import', 'tsx', 'runtime/src/all-in-one.ts'],
      {
        cwd: repoRoot,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        // The embedded database's folder is made under TMPDIR: this test's own, to find its server by.
        env: {
          ...process.env,
          TMPDIR: scratch,
          GATEWAY_PORT: String(gateway),
          CONNECTOR_PORT: String(connector),
          SANDBOX_PORT: String(sandbox),
          OTEL_SDK_DISABLED: 'true',
          // Request lines off: what remains after the banner is what stopping printed (warnings, errors).
          LOG_LEVEL: 'warn',
        },
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(() => output.includes('Inbox platform is running'), {
      what: 'the all-in-one banner',
      timeoutMs: 120_000,
    });
    await waitFor(() => /curl -sS '.*_sandbox\/sent/.test(output), { what: 'the end of the banner' });
    const key = /Demo API key\s+(\S+)/.exec(output)![1]!;
    const database = readdirSync(scratch).find((name) => name.startsWith('inbox-all-in-one-'))!;
    expect(processesUnder(join(scratch, database)).length).toBeGreaterThan(0);
    const bannerEnd = output.length;

    // A send in flight when Ctrl-C comes: the services finish it before the database goes.
    const body = JSON.stringify({ phone: '+5511999990000', message: 'até logo', channel: 'alt-a' });
    const send = new Promise<number>((resolve, reject) => {
      const req = request(
        `http://127.0.0.1:${gateway}/api/v1/send-message`,
        { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(body, () => process.kill(-child.pid!, 'SIGINT'));
    });

    expect(await exited).toBe(0);
    expect(await send).toBe(200);
    expect(output.slice(bannerEnd).trim()).toBe('Stopped.');
    expect(processesUnder(join(scratch, database))).toEqual([]);
    expect(existsSync(join(scratch, database))).toBe(false);
  }, 180_000);
});
