import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  maxRenderedTemplateChars,
  platformTexts,
  templateChannels,
} from '@inbox/contracts';
import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { adapterFor, ProviderError } from '../adapters/index.js';
import { checkAgainstCatalogue, renderBody } from '../domain/template-rules.js';
import type { IntegrationStore, StoredIntegration } from '../store/integrations.js';
import type { TemplateStore } from '../store/templates.js';
import { providerRefused, sendOnce } from './send-once.js';

export interface TemplateDeps {
  integrations: IntegrationStore;
  templates: TemplateStore;
  guard: OutboundGuard;
  logger: Logger;
  providerTimeoutMs: number;
}

async function officialIntegration(deps: TemplateDeps, workspaceId: string, integrationId: string) {
  const stored = await deps.integrations.get(workspaceId, integrationId);
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  const capability = adapterFor(stored.integration.channel)?.templates;
  if (!capability) throw AppError.badRequest(platformTexts.templateChannel(templateChannels));
  return { stored, capability };
}

/** Fetches the integration's whole template list from the provider and replaces our copy. */
async function refresh(
  deps: TemplateDeps,
  stored: StoredIntegration,
  workspaceId: string,
  stopping?: AbortSignal,
) {
  const capability = adapterFor(stored.integration.channel)?.templates;
  if (!capability) return;
  try {
    const listed = await capability.list(stored.config, {
      guard: deps.guard,
      workspaceId,
      logger: deps.logger,
      signal: stopping
        ? AbortSignal.any([AbortSignal.timeout(deps.providerTimeoutMs), stopping])
        : AbortSignal.timeout(deps.providerTimeoutMs),
    });
    await deps.templates.replace(stored.integration.id, listed);
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (error instanceof ProviderError && error.refusal === 'credentials_rejected') {
      throw await providerRefused(deps.integrations, deps.logger, stored, error, workspaceId);
    }
    throw new AppError(
      502,
      { error: platformTexts.providerFailed(stored.integration.channel) },
      { cause: error },
    );
  }
}

/** The workspace's listing under way, to wait for if it is this integration's. */
const joined = (running: { integrationId: string; done: Promise<void> }, integrationId: string) =>
  running.integrationId === integrationId ? { done: running.done } : undefined;

/**
 * Refreshes triggered by a template we do not know: a few per integration and per workspace in a while,
 * and one at a time per workspace, so a caller sending made-up names, across however many integrations,
 * cannot turn each request into a full catalogue fetch, nor hold many listings in the process at once.
 * A miss while another of the workspace's integrations is being listed does not wait for it: waiting
 * behind a listing, then making its own, would outlast the command's budget (one provider call's).
 * Only a listing started is charged: a miss that joins one costs nothing, and one the workspace's budget
 * refuses gives the integration's point back.
 */
export const missRefreshes = {
  perIntegration: new RateLimiterMemory({ points: 10, duration: 60, keyPrefix: 'template-miss' }),
  perWorkspace: new RateLimiterMemory({ points: 20, duration: 60, keyPrefix: 'template-miss-workspace' }),
  /** Per workspace, the refresh under way and its integration. */
  running: new Map<string, { integrationId: string; done: Promise<void> }>(),
  /**
   * The refresh to wait for (wrapped, as an async function's result would flatten it): this
   * integration's, under way or started now within the budgets; undefined when another of the
   * workspace's integrations is being listed, or the budgets refuse a new one.
   */
  async begin(
    workspaceId: string,
    integrationId: string,
    work: () => Promise<void>,
  ): Promise<{ done: Promise<void> } | undefined> {
    const running = this.running.get(workspaceId);
    if (running) return joined(running, integrationId);
    const charged = await this.charge(workspaceId, integrationId);
    // Another miss may have started a listing while the budgets were read (perhaps spending the last
    // point): it is the one to wait for, if it is this integration's, and this miss costs nothing.
    const meanwhile = this.running.get(workspaceId);
    if (meanwhile) {
      if (charged) await this.refund(workspaceId, integrationId);
      return joined(meanwhile, integrationId);
    }
    if (!charged) return undefined;
    const done = work().finally(() => this.running.delete(workspaceId));
    this.running.set(workspaceId, { integrationId, done });
    return { done };
  },
  async charge(workspaceId: string, integrationId: string): Promise<boolean> {
    try {
      await this.perIntegration.consume(integrationId);
    } catch {
      return false;
    }
    try {
      await this.perWorkspace.consume(workspaceId);
      return true;
    } catch {
      await this.perIntegration.reward(integrationId);
      return false;
    }
  },
  async refund(workspaceId: string, integrationId: string): Promise<void> {
    await this.perIntegration.reward(integrationId);
    await this.perWorkspace.reward(workspaceId);
  },
};

export const templates = {
  refresh,

  async refreshCommand(deps: TemplateDeps, command: CommandPayload<'cmd.connector.refresh-templates'>) {
    const { stored } = await officialIntegration(deps, command.workspace_id, command.integration_id);
    await refresh(deps, stored, command.workspace_id);
    return { templates: (await deps.templates.list(stored.integration.id)).templates };
  },

  async list(
    deps: TemplateDeps,
    command: CommandPayload<'cmd.connector.list-templates'>,
  ): Promise<CommandResult<'cmd.connector.list-templates'>> {
    const { stored } = await officialIntegration(deps, command.workspace_id, command.integration_id);
    const { templates: listed, refreshedAt } = await deps.templates.list(stored.integration.id);
    return { templates: listed, refreshed_at: refreshedAt?.toISOString() ?? null };
  },

  /**
   * Checks a template send against the catalogue before anything is stored or sent, and renders the
   * body the contact will read. A name or language we do not know triggers one refresh first (within
   * a small budget per integration), so a template approved a minute ago works at once.
   */
  async prepare(
    deps: TemplateDeps,
    command: CommandPayload<'cmd.connector.prepare-template'>,
  ): Promise<CommandResult<'cmd.connector.prepare-template'>> {
    const { stored } = await officialIntegration(deps, command.workspace_id, command.integration_id);
    if (stored.integration.status !== 'connected')
      throw AppError.badRequest(errorTexts.integrationNotConnected);
    const { name, language } = command.template;
    let entry = await deps.templates.find(stored.integration.id, name, language);
    if (!entry) {
      const refreshing = await missRefreshes.begin(command.workspace_id, stored.integration.id, () =>
        refresh(deps, stored, command.workspace_id),
      );
      if (refreshing) {
        await refreshing.done;
        entry = await deps.templates.find(stored.integration.id, name, language);
      }
    }
    const approved = checkAgainstCatalogue(entry, command.template);
    const rendered = renderBody(approved.body, command.template.variables);
    if (rendered.length > maxRenderedTemplateChars) {
      throw AppError.badRequest(
        platformTexts.templateRenderedTooLong(name, rendered.length, maxRenderedTemplateChars),
      );
    }
    return { rendered_text: rendered };
  },

  /** Sends the template message; the provider's own refusals come back with the same codes. */
  send(
    deps: TemplateDeps,
    command: CommandPayload<'cmd.connector.send-template'>,
  ): Promise<CommandResult<'cmd.connector.send-template'>> {
    const ids = {
      workspaceId: command.workspace_id,
      integrationId: command.integration_id,
      messageId: command.message_id,
    };
    return sendOnce({ ...deps, store: deps.integrations }, ids, (stored, call) => {
      const capability = adapterFor(stored.integration.channel)?.templates;
      if (!capability) throw AppError.badRequest(platformTexts.templateChannel(templateChannels));
      return capability.send(
        stored.config,
        { to: command.to.replace(/^\+/, ''), template: command.template },
        call,
      );
    });
  },
};
