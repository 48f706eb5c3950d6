import { z } from 'zod';

/**
 * Notices: fire-and-forget messages that every replica of every listening service receives (fan-out),
 * unlike events, which a durable consumer hands to one replica. Nothing is stored: a replica that is
 * down misses them, so they may only speed up what would also happen without them (e.g. cache expiry).
 */
export const noticeCatalogue = {
  'notice.gateway.workspace-changed': z.object({ workspace_id: z.uuid() }),
  // An integration was created, changed or removed: the connector's replicas drop what they hold of it
  // (they would otherwise trust it for a few more seconds).
  'notice.connector.integration-changed': z.object({ workspace_id: z.uuid(), integration_id: z.uuid() }),
  // A live chat session has a new message: the replica holding its open widget streams sends it now
  // (the streams also look for new messages every few seconds, so a lost notice only delays one).
  'notice.connector.livechat-message': z.object({ session_id: z.uuid() }),
} as const;

export type NoticeSubject = keyof typeof noticeCatalogue;
export type NoticePayload<S extends NoticeSubject> = z.output<(typeof noticeCatalogue)[S]>;
