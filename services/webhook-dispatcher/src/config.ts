import { cidrListSetting } from '@inbox/outbound-http';
import { env } from '@inbox/service-kit';
import { z } from 'zod';

/**
 * WEBHOOK_PER_ENDPOINT_CONCURRENCY's default. The cap spares a receiver a flood of connections; it is no
 * guard between tenants (a workspace's room in a worker is, and a failing endpoint's one probe), and at 8
 * one busy endpoint's deliveries queued behind its own slots at about 1,500/s, with a dispatcher's CPU to
 * spare (bench/RESULTS.md, forty-eighth session).
 */
export const defaultPerEndpointConcurrency = 32;

/** WEBHOOK_RETRY_SCHEDULE's default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const defaultRetrySchedule = '5,300,1800,7200,18000,36000,36000';

export const DispatcherConfig = z.object({
  DISPATCHER_PORT: env.port(8084),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  BUS_URL: env.busUrl,
  BUS_PREFIX: env.busPrefix,
  ENCRYPTION_KEY: env.encryptionKey,
  /** Private ranges webhook URLs may reach (the connector reads the same setting for providers). */
  OUTBOUND_ALLOWED_CIDRS: cidrListSetting.default(''),
  /** Deprecated alias of OUTBOUND_ALLOWED_CIDRS, kept so existing deployments keep their allow-list. */
  WEBHOOK_ALLOWED_CIDRS: cidrListSetting.default(''),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(,\d+)*$/, { error: 'a comma-separated list of seconds, e.g. 5,300,1800' })
    .default(defaultRetrySchedule),
  WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().positive().default(120),
  /** How long a secret replaced by a rotation keeps signing alongside the new one (0: not at all). */
  WEBHOOK_SECRET_GRACE_HOURS: z.coerce.number().min(0).default(24),
  /** How long a finished (delivered or failed) delivery and its attempts are kept before they are deleted. */
  WEBHOOK_RETENTION_DAYS: z.coerce.number().positive().default(30),
  /**
   * Whether each delivery keeps its own copy of its event's body (`each`), as the release before event
   * bodies reads it, or only the event does (`once`). `once` when no replica of that release is left.
   */
  WEBHOOK_BODY_COPIES: z.enum(['each', 'once']).default('once'),
  /** Attempts in flight at once in this process, over all endpoints. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().positive().default(128),
  /** Attempts in flight at once to one endpoint, so that no receiver gets a flood of connections. */
  WEBHOOK_PER_ENDPOINT_CONCURRENCY: z.coerce.number().int().positive().default(defaultPerEndpointConcurrency),
  LOG_LEVEL: env.logLevel,
});
export type DispatcherConfig = z.output<typeof DispatcherConfig>;

/** The allow-list in force: OUTBOUND_ALLOWED_CIDRS, or the deprecated WEBHOOK_ALLOWED_CIDRS when only that is set. */
export function allowedCidrs(
  config: Pick<DispatcherConfig, 'OUTBOUND_ALLOWED_CIDRS' | 'WEBHOOK_ALLOWED_CIDRS'>,
): string {
  return config.OUTBOUND_ALLOWED_CIDRS.trim() || config.WEBHOOK_ALLOWED_CIDRS;
}
