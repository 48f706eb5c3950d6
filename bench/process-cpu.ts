// CPU time and memory of the processes a bench starts, read from /proc (Linux), so a run can say how many
// milliseconds of CPU each process spent per request rather than only how fast requests came back.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime, in ticks. */
  own: number;
  /** cutime + cstime: what children that have exited spent, in ticks. */
  reaped: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      ppid: Number(fields[1]),
      own: Number(fields[11]) + Number(fields[12]),
      reaped: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined; // Exited since the listing.
  }
}

function allStats(): ProcStat[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((stat): stat is ProcStat => stat !== undefined);
}

/** A process and every descendant alive now (Postgres backends, the Erlang VM under its script). */
function tree(root: number, stats: ProcStat[]): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  for (const stat of stats) byParent.set(stat.ppid, [...(byParent.get(stat.ppid) ?? []), stat]);
  const found: ProcStat[] = [];
  const queue = stats.filter((stat) => stat.pid === root);
  while (queue.length > 0) {
    const next = queue.shift()!;
    found.push(next);
    queue.push(...(byParent.get(next.pid) ?? []));
  }
  return found;
}

/**
 * CPU milliseconds of each named process tree so far: the live processes' own time plus what their exited
 * children spent (a backend that exits hands its time to its parent's reaped total).
 */
export function cpuMillis(roots: Record<string, number>): Record<string, number> {
  const stats = allStats();
  return Object.fromEntries(
    Object.entries(roots).map(([name, root]) => {
      const ticks = tree(root, stats).reduce((sum, stat) => sum + stat.own + stat.reaped, 0);
      return [name, (ticks * 1000) / ticksPerSecond];
    }),
  );
}

/**
 * For each named process tree, `read` summed over its processes alive now; a process that exits between
 * the listing and its read, or whose file cannot be read, counts nothing.
 */
function sumOverTrees(roots: Record<string, number>, read: (pid: number) => number): Record<string, number> {
  const stats = allStats();
  return Object.fromEntries(
    Object.entries(roots).map(([name, root]) => {
      let sum = 0;
      for (const { pid } of tree(root, stats)) {
        try {
          sum += read(pid);
        } catch {
          // Exited since the listing.
        }
      }
      return [name, sum];
    }),
  );
}

const divided = (values: Record<string, number>, by: number) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, value / by]));

/** Resident memory of each named process tree, in MiB. */
export function rssMiB(roots: Record<string, number>): Record<string, number> {
  const kib = sumOverTrees(roots, (pid) =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0),
  );
  return divided(kib, 1024);
}

/**
 * Milliseconds each named process tree's main threads have spent runnable but waiting for a core so far
 * (the second field of /proc/<pid>/schedstat, which needs a kernel with schedstats): on a host whose cores
 * every process shares, the part of a request's latency that is the queue for a core.
 */
export function runQueueWaitMillis(roots: Record<string, number>): Record<string, number> {
  const nanos = sumOverTrees(roots, (pid) =>
    Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1] ?? 0),
  );
  return divided(nanos, 1e6);
}
