import { randomUUID } from 'node:crypto';
import { AppError, type WireEvent } from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { Bus } from '../src/index.js';

/** Creates `replicas` buses that see the same subjects and streams (one "installation"). */
export type BusFactory = (replicas: number) => Promise<Bus[]>;

const workspace = { id: randomUUID(), default_country_code: '55' };
const sendMessage = {
  workspace,
  phone: '+5511999990000',
  message: 'olá',
  channel: 'alt-a' as const,
};
const reply = {
  success: true as const,
  conversationId: randomUUID(),
  contactId: randomUUID(),
  messageId: randomUUID(),
  waMessageId: 'BAE5',
  contactCreated: true,
  conversationCreated: true,
  sent_at: new Date().toISOString(),
};

function event(type = 'message.sent', id = randomUUID()): WireEvent {
  return { id, type, workspace_id: workspace.id, occurred_at: new Date().toISOString(), data: { n: id } };
}

/** The behaviour every transport must show; run once per transport. */
export function busContract(name: string, factory: BusFactory): void {
  describe(`bus contract: ${name}`, () => {
    const open: Bus[] = [];
    const make = async (replicas = 1) => {
      const buses = await factory(replicas);
      open.push(...buses);
      return buses;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((bus) => bus.drain().catch(() => undefined)));
    });

    it('answers a command with the handler data, validated against the catalogue', async () => {
      const [bus] = await make();
      let received: unknown;
      await bus!.handle('cmd.messaging.send-message', async (payload) => {
        received = payload;
        return reply;
      });
      await expect(bus!.request('cmd.messaging.send-message', sendMessage)).resolves.toEqual(reply);
      expect(received).toMatchObject(sendMessage);
    });

    it('carries an AppError across unchanged and hides unknown errors behind a 500', async () => {
      const [bus] = await make();
      await bus!.handle('cmd.messaging.send-message', async (payload) => {
        if (payload.message === 'boom') throw new Error('secret detail');
        throw new AppError(400, { error: 'Integração não está conectada' });
      });
      const known = await bus!.request('cmd.messaging.send-message', sendMessage).catch((e: unknown) => e);
      expect(known).toBeInstanceOf(AppError);
      expect(known).toMatchObject({ status: 400, body: { error: 'Integração não está conectada' } });
      const unknown = await bus!
        .request('cmd.messaging.send-message', { ...sendMessage, message: 'boom' })
        .catch((e: unknown) => e);
      expect(unknown).toMatchObject({ status: 500, body: { error: 'Erro interno' } });
      expect(JSON.stringify((unknown as AppError).body)).not.toContain('secret detail');
    });

    it('answers 503 when nobody handles the subject and 504 when the handler is too slow', async () => {
      const [bus] = await make();
      await expect(bus!.request('cmd.messaging.send-message', sendMessage)).rejects.toMatchObject({
        status: 503,
      });
      await bus!.handle(
        'cmd.messaging.send-message',
        () => new Promise((resolve) => setTimeout(() => resolve(reply), 1_000)),
      );
      await expect(
        bus!.request('cmd.messaging.send-message', sendMessage, { timeoutMs: 100 }),
      ).rejects.toMatchObject({ status: 504 });
    });

    it('spreads commands over the replicas of a service, each answered once', async () => {
      const buses = await make(2);
      const counts = [0, 0];
      await Promise.all(
        buses.map((bus, i) =>
          bus.handle('cmd.messaging.send-message', async () => {
            counts[i]!++;
            return reply;
          }),
        ),
      );
      await Promise.all(
        Array.from({ length: 40 }, () => buses[0]!.request('cmd.messaging.send-message', sendMessage)),
      );
      expect(counts[0]! + counts[1]!).toBe(40);
      expect(counts[0]).toBeGreaterThan(0);
      expect(counts[1]).toBeGreaterThan(0);
    });

    it('delivers each event once to a durable shared by replicas, and to every durable', async () => {
      const buses = await make(2);
      const shared: string[] = [];
      const other: string[] = [];
      for (const bus of buses) {
        await bus.consume({ durable: 'dispatcher', filter: '>' }, async (e) => {
          shared.push(e.id);
        });
      }
      const sequences: number[] = [];
      await buses[0]!.consume({ durable: 'audit', filter: '>' }, async (e, delivery) => {
        other.push(e.id);
        sequences.push(delivery.sequence);
      });
      const events = Array.from({ length: 20 }, () => event());
      for (const e of events) await buses[1]!.publish(e);
      await waitFor(() => shared.length === 20 && other.length === 20, { what: 'all deliveries' });
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      expect(new Set(sequences).size).toBe(20);
      expect([...shared].sort()).toEqual(events.map((e) => e.id).sort());
      expect(other).toEqual(events.map((e) => e.id));
    });

    it('keeps the envelope intact and drops a second publish of the same id', async () => {
      const [bus] = await make();
      const seen: WireEvent[] = [];
      await bus!.consume({ durable: 'dispatcher', filter: '>' }, async (e) => {
        seen.push(e);
      });
      const first = event();
      await bus!.publish(first);
      await bus!.publish(first);
      const marker = event();
      await bus!.publish(marker);
      await waitFor(() => seen.some((e) => e.id === marker.id), { what: 'marker event' });
      expect(seen.filter((e) => e.id === first.id)).toEqual([first]);
    });

    it('reports the ack floor: every event up to it has been handled', async () => {
      const [bus] = await make();
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handled: number[] = [];
      let heldSequence = 0;
      await bus!.consume(
        { durable: 'floor', filter: 'message.sent', concurrency: 4 },
        async (e, delivery) => {
          if ((e.data as { n: string }).n === 'hold') {
            heldSequence = delivery.sequence;
            await held;
          }
          handled.push(delivery.sequence);
        },
      );
      try {
        await bus!.publish(event());
        await bus!.publish(event('conversation.resolved'));
        await bus!.publish({ ...event(), data: { n: 'hold' } });
        await bus!.publish(event());
        await waitFor(() => handled.length === 2 && heldSequence > 0, { what: 'the two events not held' });
        const stuck = await bus!.consumerPosition('floor');
        // The held event keeps the floor below it, though a later event is done.
        expect(stuck.ackFloor).toBeGreaterThanOrEqual(Math.min(...handled));
        expect(stuck.ackFloor).toBeLessThan(heldSequence);
      } finally {
        release();
      }
      await waitFor(
        async () =>
          (await bus!.consumerPosition('floor')).ackFloor >= Math.max(...handled) && handled.length === 3,
        {
          what: 'the floor to pass every handled event',
        },
      );
    });

    it('delivers only the types its filter names', async () => {
      const [bus] = await make();
      const seen: string[] = [];
      await bus!.consume({ durable: 'sent-only', filter: 'message.sent' }, async (e) => {
        seen.push(e.type);
      });
      await bus!.publish(event('conversation.resolved'));
      await bus!.publish(event('message.sent'));
      await bus!.publish(event('message.sent'));
      await waitFor(() => seen.length === 2, { what: 'two message.sent' });
      expect(seen).toEqual(['message.sent', 'message.sent']);
    });

    it('redelivers a failed event with a growing attempt count until it succeeds', async () => {
      const [bus] = await make();
      const attempts: number[] = [];
      await bus!.consume(
        { durable: 'flaky', filter: '>', maxDeliver: 5, redeliveryDelaysMs: [20] },
        async (_e, delivery) => {
          attempts.push(delivery.attempt);
          if (delivery.attempt < 3) throw new Error('not yet');
        },
      );
      await bus!.publish(event());
      await waitFor(() => attempts.length === 3, { what: 'third attempt' });
      expect(attempts).toEqual([1, 2, 3]);
      expect(await bus!.deadLetters('flaky')).toEqual([]);
    });

    it('moves an event that keeps failing to the dead letters after the bounded deliveries', async () => {
      const [bus] = await make();
      let calls = 0;
      await bus!.consume(
        { durable: 'poison', filter: '>', maxDeliver: 3, redeliveryDelaysMs: [10] },
        async () => {
          calls++;
          throw new Error('cannot handle');
        },
      );
      const poison = event();
      await bus!.publish(poison);
      const letters = await waitFor(
        async () => {
          const found = await bus!.deadLetters('poison');
          return found.length > 0 ? found : undefined;
        },
        { what: 'dead letter' },
      );
      expect(calls).toBe(3);
      expect(letters).toEqual([{ durable: 'poison', event: poison, error: 'cannot handle', attempts: 3 }]);
    });

    it('does not redeliver events that wait longer than the ack deadline behind a slow handler', async () => {
      const [bus] = await make();
      const attempts: number[] = [];
      await bus!.consume(
        { durable: 'slow-queue', filter: '>', ackWaitMs: 1_000, concurrency: 1 },
        async (_e, delivery) => {
          attempts.push(delivery.attempt);
          await new Promise((resolve) => setTimeout(resolve, 400));
        },
      );
      for (let i = 0; i < 6; i++) await bus!.publish(event());
      const marker = event('conversation.resolved');
      await bus!.publish(marker);
      await waitFor(() => attempts.length >= 7, { what: 'every event handled', timeoutMs: 20_000 });
      expect(attempts).toEqual([1, 1, 1, 1, 1, 1, 1]);
    });

    it('fans a notice out to every replica, not to one of them', async () => {
      const buses = await make(2);
      const heard: string[][] = [[], []];
      await Promise.all(
        buses.map((bus, i) =>
          bus.onNotice('notice.gateway.workspace-changed', (notice) => {
            heard[i]!.push(notice.workspace_id);
          }),
        ),
      );
      const id = randomUUID();
      await buses[0]!.notify('notice.gateway.workspace-changed', { workspace_id: id });
      await waitFor(() => heard[0]!.length === 1 && heard[1]!.length === 1, {
        what: 'both replicas to hear it',
      });
      expect(heard).toEqual([[id], [id]]);
    });

    it('lets in-flight handlers finish when draining', async () => {
      const [bus] = await make();
      let finished = false;
      let started = false;
      await bus!.consume({ durable: 'slow', filter: '>' }, async () => {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 300));
        finished = true;
      });
      await bus!.publish(event());
      await waitFor(() => started, { what: 'handler start' });
      await bus!.drain();
      expect(finished).toBe(true);
    });
  });
}
