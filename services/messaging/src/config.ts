import { longestCommandMs } from '@inbox/contracts';
import { env } from '@inbox/service-kit';
import { z } from 'zod';

/** A pending message is reconciled no sooner than this: longer than any send command may take. */
export const minReconcileAfterMinutes = Math.ceil(longestCommandMs / 60_000);

export const MessagingConfig = z.object({
  MESSAGING_PORT: env.port(8082),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  BUS_URL: env.busUrl,
  BUS_PREFIX: env.busPrefix,
  OUTBOX_RETENTION_HOURS: env.outboxRetentionHours,
  /** How long an outbound message may stay pending before reconciliation settles it from the connector. */
  PENDING_RECONCILE_AFTER_MINUTES: z.coerce
    .number()
    .int()
    .min(minReconcileAfterMinutes, {
      error: `must be at least ${minReconcileAfterMinutes}, longer than any send may take`,
    })
    .default(5),
  LOG_LEVEL: env.logLevel,
});
