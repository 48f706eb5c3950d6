import type { Bus } from '@inbox/bus';
import {
  type LocalOperation,
  type OpenApiDocument,
  openApiDocument,
  type RouteInput,
} from '@inbox/contracts';
import type { WorkspaceStore } from '../store/workspaces.js';

export interface LocalOperationDeps {
  store: WorkspaceStore;
  bus: Bus;
  /** Tells every gateway replica that a workspace's key or status changed. */
  workspaceChanged(workspaceId: string): Promise<void>;
}

type Operation = (input: RouteInput) => Promise<unknown>;

/**
 * The routes the gateway answers itself: workspaces are its own data, a contact's view spans two owners,
 * and the OpenAPI document describes the gateway's own routes.
 */
export function localOperations({
  store,
  bus,
  workspaceChanged,
}: LocalOperationDeps): Record<LocalOperation, Operation> {
  const workspaceId = (input: RouteInput) => input.caller.workspace_id;
  // Generated once, when first asked for: it depends on nothing but the code.
  let document: OpenApiDocument | undefined;
  return {
    'list-workspaces': async () => ({
      workspaces: (await store.list()).map((workspace) => ({ workspace_id: workspace.id, ...workspace })),
    }),
    'create-workspace': async ({ body }) => {
      const { workspace, apiKey } = await store.create(
        body as { name: string; default_country_code: string },
      );
      return { workspace_id: workspace.id, ...workspace, api_key: apiKey };
    },
    'get-workspace': async (input) => {
      const workspace = await store.get(workspaceId(input));
      return { workspace_id: workspace!.id, ...workspace };
    },
    'update-workspace': async (input) => {
      const { status } = input.body as { status: 'active' | 'inactive' | 'suspended' };
      const workspace = await store.setStatus(workspaceId(input), status);
      await workspaceChanged(workspace!.id);
      return { workspace_id: workspace!.id, ...workspace };
    },
    'rotate-api-key': async (input) => {
      const apiKey = await store.rotateKey(workspaceId(input));
      await workspaceChanged(workspaceId(input));
      return { api_key: apiKey };
    },
    // The contact is messaging's; its stage in each pipeline is the pipeline service's.
    'get-contact': async (input) => {
      const ids = { workspace_id: workspaceId(input), contact_id: input.params.contact_id as string };
      const contact = await bus.request('cmd.messaging.get-contact', ids);
      const { stages } = await bus.request('cmd.pipeline.contact-stages', ids);
      return { ...contact, stages };
    },
    // The board's cards: where each contact stands is the pipeline service's, who the contact is messaging's.
    'list-pipeline-contacts': async (input) => {
      const workspace_id = workspaceId(input);
      const { positions } = await bus.request('cmd.pipeline.list-positions', {
        workspace_id,
        pipeline_id: input.params.pipeline_id as string,
        limit: input.query.limit as number,
      });
      const { contacts } = await bus.request('cmd.messaging.list-contacts', {
        workspace_id,
        contact_ids: positions.map((position) => position.contact_id),
      });
      const byId = new Map(contacts.map((contact) => [contact.id, contact]));
      return {
        contacts: positions.flatMap(({ contact_id, stage, moved_at }) => {
          const contact = byId.get(contact_id);
          return contact
            ? [{ id: contact.id, phone: contact.phone, name: contact.name, stage, moved_at }]
            : [];
        }),
      };
    },
    'openapi-document': async () => (document ??= openApiDocument()),
  };
}
