import { meter } from '@inbox/telemetry';

const busMeter = () => meter('bus');

/** Time a command took, by subject and outcome (ok, or the failure's status). */
export const commandDuration = busMeter().createHistogram('bus.command.duration', {
  description: 'Duration of bus commands as the caller saw them, by subject and outcome',
  unit: 's',
});

/** Events handed to a consumer again after a failure or a lapsed deadline. */
export const redeliveries = busMeter().createCounter('bus.consumer.redeliveries', {
  description: 'Events redelivered to a durable consumer',
});

/** Deliveries whose handler is waiting out an outage in place (outage.ts). */
export const outageWaits = busMeter().createCounter('bus.consumer.outage_waits', {
  description:
    'Deliveries whose handler failed with an outage (its database or a service it asks unreachable) and is run again in place until it ends',
});

/** Commands taken from the queue after their caller had given up, dropped unanswered. */
export const lateCommands = busMeter().createCounter('bus.command.late', {
  description: 'Commands dropped by the handler side because their caller had already timed out',
});

const positions = new Map<string, number>();
busMeter()
  .createObservableGauge('bus.consumer.pending', {
    description: 'Events in the stream not yet delivered to each durable consumer',
  })
  .addCallback((result) => {
    for (const [durable, pending] of positions) result.observe(pending, { durable });
  });

export function notePending(durable: string, pending: number): void {
  positions.set(durable, pending);
}

export async function timeCommand<T>(subject: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const result = await work();
    commandDuration.record((performance.now() - started) / 1000, { subject, outcome: 'ok' });
    return result;
  } catch (error) {
    const status = (error as { status?: number }).status;
    commandDuration.record((performance.now() - started) / 1000, {
      subject,
      outcome: status ? String(status) : 'error',
    });
    throw error;
  }
}
