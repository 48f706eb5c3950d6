import type { z } from 'zod';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once at start-up; a bad value stops the process with every problem named. */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map(
    (issue) => `  ${issue.path.join('.') || '(env)'}: ${issue.message}`,
  );
  throw new ConfigError(`invalid configuration:\n${problems.join('\n')}`);
}

/** For a process's entry point: a bad configuration ends the process with its message and no stack. */
export function configFromEnv<S extends z.ZodType>(schema: S, service: string): z.output<S> {
  try {
    return loadConfig(schema);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${service}: ${error.message}\n`);
    process.exit(1);
  }
}
