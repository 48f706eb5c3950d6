import { fileURLToPath } from 'node:url';
import { outboxRelay, type ServiceDefinition } from '@inbox/service-kit';
import { moveLead } from './handlers/move-lead.js';
import { pipelines } from './handlers/pipelines.js';

export interface PipelineOptions {
  /** OUTBOX_RETENTION_HOURS: how long published events stay in the outbox. */
  outboxRetentionHours?: number;
}

/** Owns funnels (pipelines and their stages), each contact's stage per pipeline, and the move history. */
export function pipelineService(options: PipelineOptions = {}): ServiceDefinition {
  return {
    name: 'pipeline',
    schema: 'pipeline',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: (service) => {
      const { pool, bus } = service;
      const relay = outboxRelay(service, 'pipeline', options.outboxRetentionHours);
      return {
        start: async () => {
          await bus.handle('cmd.pipeline.move-lead', (command) => moveLead({ pool, bus, relay }, command));
          await bus.handle('cmd.pipeline.create', (command) => pipelines.create(pool, command));
          await bus.handle('cmd.pipeline.list', (command) => pipelines.list(pool, command));
          await bus.handle('cmd.pipeline.get', (command) => pipelines.get(pool, command));
          await bus.handle('cmd.pipeline.rename', (command) => pipelines.rename(pool, command));
          await bus.handle('cmd.pipeline.add-stage', (command) => pipelines.addStage(pool, command));
          await bus.handle('cmd.pipeline.rename-stage', (command) => pipelines.renameStage(pool, command));
          await bus.handle('cmd.pipeline.reorder-stages', (command) =>
            pipelines.reorderStages(pool, command),
          );
          await bus.handle('cmd.pipeline.remove-stage', (command) => pipelines.removeStage(pool, command));
          await bus.handle('cmd.pipeline.list-positions', (command) =>
            pipelines.listPositions(pool, command),
          );
          await bus.handle('cmd.pipeline.contact-stages', (command) =>
            pipelines.contactStages(pool, command),
          );
          await bus.handle('cmd.pipeline.lead-history', (command) => pipelines.leadHistory(pool, command));
          relay.start();
        },
        stop: () => relay.stop(),
      };
    },
  };
}
