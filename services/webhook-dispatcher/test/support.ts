import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EventEnvelope } from '@inbox/contracts';

export interface Hit {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  hits: Hit[];
  close(): Promise<void>;
}

/** A real HTTP receiver; `answer` decides each response (status, headers, delay, or silence). */
export async function receiver(
  answer: (hit: Hit, res: ServerResponse, index: number) => void = (_hit, res) => res.end('ok'),
): Promise<Receiver> {
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit = { headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      hits.push(hit);
      answer(hit, res, hits.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function messageSent(workspaceId: string, conversationId = randomUUID(), text = 'olá'): EventEnvelope {
  const id = randomUUID();
  return {
    id,
    type: 'message.sent',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    data: {
      event: 'message.sent',
      workspace_id: workspaceId,
      conversation_id: conversationId,
      message: { id: randomUUID(), text, type: 'text' },
      status: { sender_type: 'agent' },
      integration: { id: randomUUID(), provider: 'chat' },
    },
  };
}
