import type { Bus } from '@inbox/bus';
import { type CommandResult, platformTexts, sendRecordRetentionDays } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import type { Logger } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { ConversationStore } from './store/conversations.js';
import {
  lockIfPending,
  type PendingMessage,
  setAside,
  stalePendingMessages,
  workspacesWithStalePending,
} from './store/pending-messages.js';
import { recordSent } from './store/sent-messages.js';

const reconciled = meter('messaging').createCounter('messaging.pending.reconciled', {
  description:
    'Outbound messages left pending that the reconciliation job settled: sent (the connector had recorded the send), failed (no send ever started), unknown (a provider call started and never reported back; left pending) or set-aside (settling it failed; tried again after a full wait)',
});

export interface PendingReconcilerOptions {
  pool: Pool;
  bus: Bus;
  relay: OutboxRelay;
  logger: Logger;
  /** PENDING_RECONCILE_AFTER_MINUTES: how long a message may stay pending before it is settled. */
  afterMinutes: number;
  /** How often stale pending messages are looked for; a minute by default. */
  intervalMs?: number;
  /** How many of one workspace's messages a round settles (10). */
  perWorkspace?: number;
  /** How many workspaces one query reads (50). */
  workspacesPerQuery?: number;
}

type Outcome = 'sent' | 'failed' | 'unknown' | 'settled-meanwhile' | 'set-aside';

/**
 * Whether the connector may have forgotten the message's send: stored before the connector's retention of
 * send records began (a day's margin for clocks and the pruner's pace). By its creation, which comes
 * before any attempt: being set aside, or retried, makes it pending again from then on, and says nothing
 * of when its send was.
 */
function outlivedSendRecords(message: PendingMessage): boolean {
  return message.created_at.getTime() < Date.now() - (sendRecordRetentionDays - 1) * 86_400_000;
}

/**
 * Settles outbound messages left pending (the process died between storing one and the connector's
 * answer, the answer was lost, or the provider did not answer in time): it asks the connector what it
 * recorded of the send, never the provider, and marks the message sent (with `message.sent` through the
 * outbox) or failed with a reason that says it will not be sent again. A message stays pending at least
 * `afterMinutes`, longer than any send command may take, so a send in progress is never overtaken.
 */
export class PendingReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(private readonly options: PendingReconcilerOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.reconcile()
        .catch((error: unknown) => this.options.logger.warn({ err: error }, 'pending reconciliation failed'))
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * One pass over every stale pending message; says how many it settled each way. It goes in rounds,
   * `perWorkspace` of each workspace's messages a round and `workspacesPerQuery` workspaces a query,
   * reading which workspaces have any each round: one workspace's backlog adds rounds, and a workspace
   * whose messages went stale meanwhile has its turn in the next round, not after that backlog.
   */
  async reconcile(): Promise<Record<Outcome, number>> {
    const { pool, afterMinutes, perWorkspace = 10, workspacesPerQuery = 50 } = this.options;
    const counts: Record<Outcome, number> = {
      sent: 0,
      failed: 0,
      unknown: 0,
      'settled-meanwhile': 0,
      'set-aside': 0,
    };
    const seen = new Set<string>();
    // Workspaces whose oldest stale messages all came back again (held by a replica still settling them):
    // left to the next pass rather than read again every round.
    const held = new Set<string>();
    for (;;) {
      const workspaces = (await workspacesWithStalePending(pool, afterMinutes)).filter((w) => !held.has(w));
      let settled = 0;
      for (let start = 0; start < workspaces.length; start += workspacesPerQuery) {
        const turn = workspaces.slice(start, start + workspacesPerQuery);
        const fresh = new Set<string>();
        for (const message of await stalePendingMessages(pool, afterMinutes, turn, perWorkspace)) {
          if (seen.has(message.id)) continue;
          seen.add(message.id);
          fresh.add(message.workspace_id);
          counts[await this.settleOrSetAside(message)]++;
          settled++;
        }
        for (const workspace of turn) if (!fresh.has(workspace)) held.add(workspace);
      }
      if (settled === 0) break;
    }
    if (counts.sent > 0) this.options.relay.wake();
    return counts;
  }

  /**
   * Asks the connector what it recorded, then settles the message from that. Whatever the connector
   * answers besides an outcome (it is unreachable, slow, or failing itself) ends the pass: the next one
   * asks again, rather than failing messages whose send may well be recorded. A failure of the settling
   * itself is this message's alone: it is set aside for as long as a new message waits, behind every
   * other, so that one tenant's message that cannot be settled (its event too large to write, say) never
   * stops the job for every tenant, pass after pass.
   */
  private async settleOrSetAside(message: PendingMessage): Promise<Outcome> {
    const outcome = await this.options.bus.request('cmd.connector.send-outcome', {
      workspace_id: message.workspace_id,
      message_id: message.id,
    });
    try {
      return await this.settle(message, outcome);
    } catch (error) {
      const { pool, logger, afterMinutes } = this.options;
      await setAside(pool, message.workspace_id, message.id);
      reconciled.add(1, { outcome: 'set-aside' });
      logger.error(
        {
          err: error,
          message_id: message.id,
          workspace_id: message.workspace_id,
          retry_after_minutes: afterMinutes,
        },
        'pending message could not be settled: set aside, tried again later',
      );
      return 'set-aside';
    }
  }

  private async settle(
    message: PendingMessage,
    outcome: CommandResult<'cmd.connector.send-outcome'>,
  ): Promise<Outcome> {
    const { pool, logger, afterMinutes } = this.options;
    const settled = await withTransaction(pool, async (client): Promise<Outcome> => {
      if (!(await lockIfPending(client, message.workspace_id, message.id))) return 'settled-meanwhile';
      if (outcome.outcome === 'sent') {
        await recordSent(client, {
          workspaceId: message.workspace_id,
          conversationId: message.conversation_id,
          integration: { id: message.integration_id, provider: message.provider },
          messageId: message.id,
          text: message.text,
          senderType: message.sender_type,
          providerMessageId: outcome.provider_message_id,
          sentAt: outcome.sent_at,
        });
        return 'sent';
      }
      // A send recorded longer ago than the connector keeps it reads as never started: pending that long
      // (a message set aside pass after pass), it may well have been sent, so it is not failed.
      if (
        outcome.outcome === 'unknown' ||
        (outcome.outcome === 'unrecorded' && outlivedSendRecords(message))
      ) {
        await new ConversationStore(client, message.workspace_id).markOutcomeUnknown(
          message.id,
          platformTexts.sendOutcomeUnknown(message.id),
        );
        return 'unknown';
      }
      await new ConversationStore(client, message.workspace_id).markFailed(
        message.id,
        platformTexts.pendingUnresolved(afterMinutes),
      );
      return 'failed';
    });
    if (settled === 'settled-meanwhile') return settled;
    reconciled.add(1, { outcome: settled });
    const fields = {
      message_id: message.id,
      workspace_id: message.workspace_id,
      conversation_id: message.conversation_id,
      outcome: settled,
    };
    if (settled === 'sent')
      logger.info(fields, 'pending message reconciled: the connector had recorded its send');
    else if (settled === 'unknown')
      logger.warn(fields, 'pending message left pending: its provider call started and never reported back');
    else
      logger.warn(fields, 'pending message failed by reconciliation: its send never started, not sent again');
    return settled;
  }
}
