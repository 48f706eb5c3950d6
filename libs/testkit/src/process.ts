import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';

export interface ManagedProcess {
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

/** Spawns a process, keeps the tail of its output for failure messages, and stops it for sure. */
export function startProcess(
  command: string,
  args: string[],
  options: SpawnOptions & { onOutput?: (chunk: string) => void } = {},
): ManagedProcess {
  const { onOutput, ...spawnOptions } = options;
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOptions });
  let tail = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    tail = (tail + text).slice(-20_000);
    onOutput?.(text);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? (signal ? null : 0)));
    child.once('error', (error) => {
      tail += `\nspawn error: ${error.message}`;
      resolve(null);
    });
  });
  return {
    child,
    exited,
    output: () => tail,
    async stop(signal = 'SIGTERM', timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Runs an ES module snippet in a fresh Node process, the workspace's packages from their sources, and
 * returns the JSON of the last line it printed: for what only a new process shows (which modules loading
 * a package pulls in).
 */
export function runModuleSnippet<T>(script: string): T {
  const output = execFileSync(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--input-type=module', '--eval', script],
    { encoding: 'utf8' },
  );
  return JSON.parse(output.trim().split('\n').at(-1)!) as T;
}
