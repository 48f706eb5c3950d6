// The fault suite's run and its count, shared by `npm run chaos` (every service killed in turn) and its
// smaller version in the e2e suite: a keyed load, SIGKILLs with restarts under it, then what was lost,
// sent twice, left unanswered past the deadline, or delivered twice.
import type { RunningStack } from '@inbox/runtime';
import { waitFor } from '@inbox/testkit';
import type { KeyOutcome } from './keyed-client.js';
import { KeyedLoad, keyOfProviderSend, type LoadTarget, prepareLoadWorkspace } from './keyed-load.js';

/** One SIGKILL: of what, when, and when the restarted process said it was ready again. */
export interface Kill {
  service: string;
  killedAt: number;
  readyAt: number;
}

/** One webhook delivery as a receiver got it. */
export interface Delivery {
  /** X-Webhook-Id: the event's id, the same on every delivery of the event. */
  eventId: string;
  body: Record<string, unknown>;
}

export interface FaultRunOptions {
  stack: RunningStack;
  adminToken: string;
  /** Where the workspace's `message.sent` webhooks go; `deliveries` reads what arrived there. */
  webhookUrl: string;
  deliveries: () => Delivery[];
  /** Killed with SIGKILL and started again one after the other, in this order. */
  services: readonly string[];
  workers: number;
  /** Load kept up after each restart (and before the first kill) before the next step. */
  gapMs: number;
  /** Keys final after each restart before the next step (the load really resumed). */
  finalPerGap: number;
  /** How long a key is retried before the client gives up on it. */
  giveUpAfterMs?: number;
  /** How long every answered send's `message.sent` is waited for once the load stopped. */
  drainMs?: number;
  /** Every key in flight at a kill must be final this long after it. */
  finalWithinMs?: number;
  log?: (line: string) => void;
}

export interface FaultFigures {
  keys: number;
  /** Keys answered 2xx. */
  answered: number;
  /** Keys answered for good with something else, by status and text. */
  refused: Map<string, number>;
  /** Keys the client gave up on, never answered for good. */
  notFinal: KeyOutcome[];
  /** Message ids answered 200 with no `message.sent` delivered. */
  lost: string[];
  /** Keys the provider received more than once, with how many times. */
  providerDuplicates: Map<string, number>;
  /** Keys answered 200 that the provider never received. */
  neverAtProvider: string[];
  kills: Array<Kill & { inFlight: number; late: KeyOutcome[]; slowestMs: number }>;
  /** Event ids delivered more than once, with how many times. */
  webhookDuplicates: Map<string, number>;
  finalWithinMs: number;
}

/** SIGKILL of one service of the stack, then the same service started again with the same settings. */
export async function killAndRestart(stack: RunningStack, service: string): Promise<Kill> {
  const victim = stack.processes.get(service);
  if (!victim) throw new Error(`no process named ${service} in the stack`);
  const killedAt = Date.now();
  victim.child.kill('SIGKILL');
  await victim.exited;
  await stack.restart(service);
  return { service, killedAt, readyAt: Date.now() };
}

const messageIdOf = (outcome: KeyOutcome) =>
  String(outcome.answer?.messageId ?? outcome.answer?.message_id ?? '');

/** What the provider sandbox received, oldest first (its control API's sent log), all of it. */
export async function providerSends(sandboxUrl: string): Promise<Array<{ body: unknown }>> {
  const response = await fetch(`${sandboxUrl}/_sandbox/sent`);
  // Duplicates are counted in this log: one that let sends go would hide some.
  const dropped = Number(response.headers.get('x-sandbox-sent-dropped') ?? '0');
  if (dropped > 0)
    throw new Error(
      `the sandbox's sent log let ${dropped} sends go: raise SANDBOX_SENT_LOG_LIMIT for this run`,
    );
  return (await response.json()) as Array<{ body: unknown }>;
}

/** The run: keyed load, each service killed and restarted in turn, the load stopped and counted. */
export async function runFaults(options: FaultRunOptions): Promise<FaultFigures> {
  const { stack, workers, gapMs, finalPerGap, log = () => undefined } = options;
  const giveUpAfterMs = options.giveUpAfterMs ?? 90_000;
  const target: LoadTarget = {
    gatewayUrl: stack.gatewayUrl,
    sandboxUrl: stack.sandboxUrl!,
    adminToken: options.adminToken,
  };
  const workspace = await prepareLoadWorkspace(target, options.webhookUrl);
  const load = new KeyedLoad(stack.gatewayUrl, workspace, { workers, giveUpAfterMs });
  const loadUnderWay = async (what: string) => {
    const from = load.finalCount();
    const since = Date.now();
    await waitFor(() => load.finalCount() >= from + finalPerGap && Date.now() - since >= gapMs, {
      what,
      timeoutMs: giveUpAfterMs + gapMs,
      intervalMs: 100,
    });
  };
  const kills: Kill[] = [];
  load.start();
  try {
    await loadUnderWay('the load under way');
    for (const service of options.services) {
      const kill = await killAndRestart(stack, service);
      kills.push(kill);
      log(`killed ${service}; ready again after ${((kill.readyAt - kill.killedAt) / 1000).toFixed(1)} s`);
      await loadUnderWay(`the load answered after ${service} restarted`);
    }
  } finally {
    await load.stop();
  }
  log(`load stopped: ${load.outcomes.length} keys`);

  const answeredIds = load.outcomes.filter((o) => o.status !== undefined && o.status < 300).map(messageIdOf);
  const deliveredIds = () =>
    new Set(
      options.deliveries().map((d) => String((d.body.message as { id?: string } | undefined)?.id ?? '')),
    );
  await waitFor(() => answeredIds.every((id) => deliveredIds().has(id)), {
    what: 'message.sent for every answered send',
    timeoutMs: options.drainMs ?? 60_000,
    intervalMs: 250,
  }).catch(() => log('some answered sends have no message.sent yet: counted as lost'));
  return tallyFaults({
    outcomes: load.outcomes,
    kills,
    providerSends: await providerSends(target.sandboxUrl),
    deliveries: options.deliveries(),
    finalWithinMs: options.finalWithinMs ?? 10_000,
  });
}

/** The figures of a run, from every key's outcome, the kills, the provider's log and the webhooks. */
export function tallyFaults(input: {
  outcomes: KeyOutcome[];
  kills: Kill[];
  providerSends: Array<{ body: unknown }>;
  deliveries: Delivery[];
  finalWithinMs: number;
}): FaultFigures {
  const { outcomes, finalWithinMs } = input;
  const ours = new Set(outcomes.map((o) => o.request.key));
  const atProvider = new Map<string, number>();
  for (const send of input.providerSends) {
    const key = keyOfProviderSend(send.body);
    if (key && ours.has(key)) atProvider.set(key, (atProvider.get(key) ?? 0) + 1);
  }
  const answered = outcomes.filter((o) => o.status !== undefined && o.status < 300);
  const refused = new Map<string, number>();
  for (const o of outcomes.filter((o) => o.status !== undefined && o.status >= 300)) {
    const label = `${o.status} ${String(o.answer?.error ?? '')}`;
    refused.set(label, (refused.get(label) ?? 0) + 1);
  }
  const delivered = new Set<string>();
  const byEvent = new Map<string, number>();
  for (const delivery of input.deliveries) {
    delivered.add(String((delivery.body.message as { id?: string } | undefined)?.id ?? ''));
    byEvent.set(delivery.eventId, (byEvent.get(delivery.eventId) ?? 0) + 1);
  }
  return {
    keys: outcomes.length,
    answered: answered.length,
    refused,
    notFinal: outcomes.filter((o) => o.finalAt === undefined),
    lost: answered.map(messageIdOf).filter((id) => !delivered.has(id)),
    providerDuplicates: new Map([...atProvider].filter(([, count]) => count > 1)),
    neverAtProvider: answered.map((o) => o.request.key).filter((key) => !atProvider.has(key)),
    kills: input.kills.map((kill) => {
      const inFlight = outcomes.filter(
        (o) => o.startedAt <= kill.killedAt && (o.finalAt === undefined || o.finalAt > kill.killedAt),
      );
      return {
        ...kill,
        inFlight: inFlight.length,
        late: inFlight.filter((o) => o.finalAt === undefined || o.finalAt > kill.killedAt + finalWithinMs),
        slowestMs: Math.max(
          0,
          ...inFlight.map((o) => (o.finalAt ?? Number.POSITIVE_INFINITY) - kill.killedAt),
        ),
      };
    }),
    webhookDuplicates: new Map([...byEvent].filter(([, count]) => count > 1)),
    finalWithinMs,
  };
}

/** The figures as the tool prints them, one per line. */
export function describeFigures(figures: FaultFigures): string[] {
  const seconds = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'never');
  const lines = [
    `keyed requests            ${figures.keys}`,
    `answered 2xx              ${figures.answered}`,
    ...[...figures.refused].map(([label, count]) => `answered otherwise        ${count} × ${label}`),
    `never final (gave up)     ${figures.notFinal.length}${figures.notFinal.length ? ` (last: ${figures.notFinal[0]!.lastRetried})` : ''}`,
    `lost (200, no message.sent) ${figures.lost.length}`,
    `provider duplicates       ${figures.providerDuplicates.size} keys${figures.providerDuplicates.size ? ` (${[...figures.providerDuplicates].map(([k, n]) => `${k} ×${n}`).join(', ')})` : ''}`,
    `200 never at the provider ${figures.neverAtProvider.length}`,
    `webhook events delivered more than once ${figures.webhookDuplicates.size}`,
  ];
  for (const kill of figures.kills)
    lines.push(
      `kill ${kill.service.padEnd(19)} ready in ${seconds(kill.readyAt - kill.killedAt)}, ${kill.inFlight} keys in flight, ${kill.late.length} not final within ${seconds(figures.finalWithinMs)} (slowest ${seconds(kill.slowestMs)})`,
    );
  return lines;
}
