// BENCH_MEMORY_LIMIT: each service in a memory cgroup of its own with a pod's limit. V8 sizes both of its
// generations from the memory it may use (libuv reads the cgroup's limit), so on a large machine without
// a limit it runs with generations no pod gives it: in a 512 MiB cgroup Node 20's young generation is
// 2 MiB, against 32 MiB on this 24 GiB machine. The process must be in the cgroup before Node starts,
// hence a launcher that moves its shell there and then becomes the Node process.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { imageRuntimeEnvironment } from './image-environment.js';

/**
 * A bench run's pods, as its environment asks: BENCH_MEMORY_LIMIT=<MiB> runs each service in a memory
 * cgroup of that limit, with the image's NODE_OPTIONS, LD_PRELOAD and MALLOC_CONF (image-environment.ts) unless
 * BENCH_IMAGE_ENV=off leaves those out, to measure what they change. Undefined without a limit.
 */
export function benchPods(): { mebibytes: number; environment: Record<string, string> } | undefined {
  if (!process.env.BENCH_MEMORY_LIMIT) return undefined;
  return {
    mebibytes: Number(process.env.BENCH_MEMORY_LIMIT),
    environment: process.env.BENCH_IMAGE_ENV === 'off' ? {} : imageRuntimeEnvironment(),
  };
}

export interface PodMemoryLimits {
  /** For each name, the command that starts a process inside its own limited cgroup. */
  launchers: Record<string, string[]>;
  /** Removes the cgroups, once their processes have exited. */
  remove(): void;
}

function memoryHierarchy(): { root: string; limitFile: string } {
  if (existsSync('/sys/fs/cgroup/memory/cgroup.procs'))
    return { root: '/sys/fs/cgroup/memory', limitFile: 'memory.limit_in_bytes' };
  const controllers = '/sys/fs/cgroup/cgroup.subtree_control';
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('memory'))
    return { root: '/sys/fs/cgroup', limitFile: 'memory.max' };
  throw new Error('BENCH_MEMORY_LIMIT needs a memory cgroup this user may create (root, cgroup v1 or v2)');
}

/**
 * `environment`: variables each pod's process starts with (the image's, imageRuntimeEnvironment); `stack`
 * tells apart the cgroups of two stacks one bench runs side by side; `node`, a Node binary each pod runs
 * in place of the one it is started with (another release, to compare with); `root`, another checkout of
 * the project whose built services each pod runs in place of this one's (another commit, to compare with).
 */
export function podMemoryLimits(
  names: string[],
  mebibytes: number,
  environment: Record<string, string> = {},
  stack = '',
  { node, root }: { node?: string; root?: string } = {},
): PodMemoryLimits {
  const { root: hierarchy, limitFile } = memoryHierarchy();
  const directories = names.map((name) => {
    const directory = `${hierarchy}/inbox-bench-${process.pid}${stack ? `-${stack}` : ''}-${name.replace(/\W+/g, '-')}`;
    mkdirSync(directory, { recursive: true });
    writeFileSync(`${directory}/${limitFile}`, String(mebibytes * 2 ** 20));
    return directory;
  });
  // The command runs from the project's root with paths relative to it (its entry, the telemetry
  // register), so running it from another checkout's root runs that checkout's code.
  const script = [
    'echo $$ > "$0/cgroup.procs"',
    ...(root ? ['cd "$1"', 'shift'] : []),
    // With `node`, the command's own Node binary (its first word) is swapped for it.
    node ? 'node="$1" && shift 2 && exec "$node" "$@"' : 'exec "$@"',
  ].join(' && ');
  return {
    launchers: Object.fromEntries(
      names.map((name, index) => [
        name,
        [
          'env',
          ...Object.entries(environment).map(([variable, value]) => `${variable}=${value}`),
          '/bin/sh',
          '-c',
          script,
          directories[index]!,
          ...(root ? [root] : []),
          ...(node ? [node] : []),
        ],
      ]),
    ),
    remove: () => {
      for (const directory of directories) {
        try {
          rmdirSync(directory);
        } catch (error) {
          // A process that outlived its stop keeps its cgroup; say so rather than hide the run's own error.
          console.log(`  (${directory} left in place: ${(error as Error).message})`);
        }
      }
    },
  };
}
