import { longestCommandMs } from '@inbox/contracts';
import type { Logger } from 'pino';

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * How long a stopping process may take: the longest command it can be waiting on (a template send that
 * waits on the provider), plus a margin for its own last writes. Shorter, and a send in flight would be
 * cut off after the provider took it but before it was recorded. Deployments' grace periods exceed it.
 */
export const stopGraceMs = longestCommandMs + 5_000;

/**
 * Stops the service cleanly on SIGTERM or SIGINT: the service's own stop() takes no new work, finishes
 * what is in flight, drains the bus and closes pools; the process then exits 0. Should that take longer
 * than the grace period, it exits 1 so the orchestrator is not kept waiting.
 */
export function stopOnSignals(service: Stoppable, logger: Logger, graceMs = stopGraceMs): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const force = setTimeout(() => {
      logger.error({ grace_ms: graceMs }, 'did not stop in time; exiting');
      process.exit(1);
    }, graceMs);
    force.unref();
    service.stop().then(
      () => {
        logger.info('stopped');
        logger.flush?.();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
