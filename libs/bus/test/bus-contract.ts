import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { AppError, laneOf, type WireEvent } from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { type Bus, consumeEvents, subscriptionsFor } from '../src/index.js';

/** Creates `replicas` buses that see the same subjects and streams (one "installation"). */
export type BusFactory = (replicas: number) => Promise<Bus[]>;

export interface TransportAbilities {
  /**
   * Ends one replica as a crash would: its connection gone at once, its deliveries unacknowledged.
   * Absent where replicas cannot die apart (in-process: the whole installation is one process).
   */
  kill?: (bus: Bus) => Promise<void>;
  /**
   * The broker may hand back, counted, a delivery acknowledged just before its connection closed: RabbitMQ's
   * quorum queues (rabbitmq-server#10327, open upstream). Elsewhere an acknowledgement made is kept.
   */
  mayReturnAcknowledgedAtClose?: boolean;
}

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

/** What a handler whose database cannot be reached meets: a refused connection. */
function unreachable(): Promise<never> {
  return new Promise((_resolve, reject) => {
    // Nothing listens on port 1 of loopback.
    connect(1, '127.0.0.1').on('error', reject);
  });
}

function event(type = 'message.sent', id = randomUUID()): WireEvent {
  return { id, type, workspace_id: workspace.id, occurred_at: new Date().toISOString(), data: { n: id } };
}

/** A provider's word on a message of `workspaceId`, as the connector announces it. */
function inboundStatus(workspaceId: string): WireEvent {
  const data = {
    workspace_id: workspaceId,
    integration_id: randomUUID(),
    provider_message_id: randomUUID(),
    status: 'delivered',
    error: null,
  };
  return {
    id: randomUUID(),
    type: 'inbound.status',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    data,
  };
}

/** The behaviour every transport must show; run once per transport. */
export function busContract(name: string, factory: BusFactory, abilities: TransportAbilities = {}): void {
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

    it('keeps waiting past the silence limit for a handler that is still working on it', async () => {
      const [caller, handler] = await make(2);
      await handler!.handle(
        'cmd.messaging.send-message',
        () => new Promise((resolve) => setTimeout(() => resolve(reply), 5_000)),
      );
      // Five seconds of work against 2.5 s of allowed silence: only its signs of life keep the call.
      await expect(
        caller!.request('cmd.messaging.send-message', sendMessage, { silenceMs: 2_500 }),
      ).resolves.toEqual(reply);
    });

    it.skipIf(!abilities.kill)(
      'answers 504 soon after the replica handling a command dies, not at the end of its timeout',
      { timeout: 20_000 },
      async () => {
        const [caller, doomed] = await make(2);
        let started = false;
        await doomed!.handle('cmd.messaging.send-message', () => {
          started = true;
          return new Promise(() => undefined);
        });
        const call = caller!
          .request('cmd.messaging.send-message', sendMessage, { timeoutMs: 120_000, silenceMs: 2_000 })
          .catch((error: unknown) => error);
        await waitFor(() => started, { what: 'the doomed replica to take the command' });
        await abilities.kill!(doomed!);
        open.splice(open.indexOf(doomed!), 1);
        // The test's own 20 s bound is far inside the command's two minutes: only the silence ends it.
        expect(await call).toMatchObject({ status: 504 });
      },
    );

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
      await buses[0]!.consume({ durable: 'audit', filter: '>' }, async (e) => {
        other.push(e.id);
      });
      const events = Array.from({ length: 20 }, () => event());
      for (const e of events) await buses[1]!.publish(e);
      await waitFor(() => shared.length === 20 && other.length === 20, { what: 'all deliveries' });
      expect([...shared].sort()).toEqual(events.map((e) => e.id).sort());
      // One replica handling one at a time sees them as published.
      expect(other).toEqual(events.map((e) => e.id));
    });

    it('keeps the envelope intact, a repeated publish at most delivering the same envelope again', async () => {
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
      const copies = seen.filter((e) => e.id === first.id);
      expect(copies.length).toBeGreaterThanOrEqual(1);
      for (const copy of copies) expect(copy).toEqual(first);
    });

    it('reports the events waiting for a durable, down to none once handled', async () => {
      const [bus] = await make();
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handled: string[] = [];
      await bus!.consume({ durable: 'lagging', filter: '>', concurrency: 1 }, async (e) => {
        await held;
        handled.push(e.id);
      });
      try {
        for (let i = 0; i < 4; i++) await bus!.publish(event());
        await waitFor(async () => (await bus!.pending('lagging')) >= 2, {
          what: 'a lag behind the held one',
        });
      } finally {
        release();
      }
      await waitFor(async () => handled.length === 4 && (await bus!.pending('lagging')) === 0, {
        what: 'no lag once all are handled',
      });
    });

    it.skipIf(!abilities.kill)(
      'gives the events a replica took and never acknowledged to another replica when it dies',
      async () => {
        const [doomed, survivor] = await make(2);
        const started: string[] = [];
        const finished: string[] = [];
        const options = { durable: 'crashy', filter: '>', ackWaitMs: 1_500, concurrency: 4 };
        await doomed!.consume(options, async (e) => {
          started.push(e.id);
          await new Promise(() => undefined);
        });
        const events = Array.from({ length: 3 }, () => event());
        for (const e of events) await survivor!.publish(e);
        await waitFor(() => started.length === 3, { what: 'the doomed replica to take all three' });
        await survivor!.consume(options, async (e, delivery) => {
          if (delivery.attempt < 2) throw new Error(`first delivery of ${e.id} after the crash`);
          finished.push(e.id);
        });
        await abilities.kill!(doomed!);
        open.splice(open.indexOf(doomed!), 1);
        await waitFor(() => finished.length >= 3, { what: 'redelivery to the survivor', timeoutMs: 20_000 });
        expect([...new Set(finished)].sort()).toEqual(events.map((e) => e.id).sort());
      },
    );

    it("keeps a workspace whose inbound floods its lane from holding up the other lanes' workspaces", async () => {
      const [bus] = await make();
      const busy = randomUUID();
      let calm = randomUUID();
      while (laneOf(calm) === laneOf(busy)) calm = randomUUID();
      let open: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const handled: string[] = [];
      await consumeEvents(
        bus!,
        { durable: 'messaging', concurrency: 2 },
        {
          'inbound.message': async () => undefined,
          'inbound.status': async (e) => {
            if (e.workspace_id === busy) await gate;
            handled.push(e.workspace_id);
          },
        },
      );
      try {
        for (let i = 0; i < 6; i++) await bus!.publish(inboundStatus(busy));
        await bus!.publish(inboundStatus(calm));
        await waitFor(() => handled.includes(calm), { what: "the other lane's event" });
        expect(handled).toEqual([calm]);
      } finally {
        open();
      }
      await waitFor(() => handled.length === 7, {
        what: "the flooding workspace's events, once let through",
      });
    });

    it('delivers only the types its filter names', async () => {
      const [bus] = await make();
      const seen: string[] = [];
      // A type outside the lanes (eventLanes), whose subject is the type whatever the workspace.
      await bus!.consume({ durable: 'moves-only', filter: 'lead.moved' }, async (e) => {
        seen.push(e.type);
      });
      await bus!.publish(event('conversation.resolved'));
      await bus!.publish(event('lead.moved'));
      await bus!.publish(event('lead.moved'));
      await waitFor(() => seen.length === 2, { what: 'two lead.moved' });
      expect(seen).toEqual(['lead.moved', 'lead.moved']);
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
      // Reading the dead letters leaves them where they are.
      expect(await bus!.deadLetters('poison')).toEqual(letters);
    });

    it('waits out an outage within the delivery, never counting it toward the dead letters', async () => {
      const [bus] = await make();
      let calls = 0;
      const attempts: number[] = [];
      await bus!.consume(
        { durable: 'outage', filter: '>', maxDeliver: 2, redeliveryDelaysMs: [10], outagePausesMs: [10] },
        async (_e, delivery) => {
          calls++;
          // Its database down: more failed tries than the deliveries an event may have.
          if (calls <= 5) await unreachable();
          attempts.push(delivery.attempt);
        },
      );
      await bus!.publish(event());
      await waitFor(() => attempts.length === 1, { what: 'the event handled once the outage ended' });
      expect(calls).toBe(6);
      expect(attempts).toEqual([1]);
      expect(await bus!.deadLetters('outage')).toEqual([]);
    });

    (abilities.kill ? it : it.skip)(
      'hands an event back uncounted when its replica drains while waiting out an outage',
      async () => {
        const [leaving, staying] = await make(2);
        let tries = 0;
        await leaving!.consume(
          { durable: 'failover', filter: '>', maxDeliver: 1, outagePausesMs: [20] },
          async () => {
            tries++;
            await unreachable();
          },
        );
        await leaving!.publish(event());
        await waitFor(() => tries >= 2, { what: 'the outage being waited out' });
        await leaving!.drain();
        // One delivery allowed, spent on the outage: counted, the drain would have dead-lettered it.
        const handled: number[] = [];
        await staying!.consume({ durable: 'failover', filter: '>', maxDeliver: 1 }, async (_e, delivery) => {
          handled.push(delivery.attempt);
        });
        await waitFor(() => handled.includes(1), {
          what: 'the event handled by the replica that stays, uncounted',
        });
        // Handed back once, as its first delivery. Where the broker may also hand back the delivery the
        // leaving replica acknowledged just before its connection closed (RabbitMQ 3.10 did, one drain in
        // about a hundred under load), at least once allows that copy, counted, and nothing else.
        const allowed = abilities.mayReturnAcknowledgedAtClose ? [[1], [2, 1], [1, 2]] : [[1]];
        expect(allowed).toContainEqual(handled);
        expect(await staying!.deadLetters('failover')).toEqual([]);
      },
    );

    it('counts an outage longer than its wait as a failed delivery', async () => {
      const [bus] = await make();
      let calls = 0;
      await bus!.consume(
        {
          durable: 'long-outage',
          filter: '>',
          maxDeliver: 2,
          redeliveryDelaysMs: [10],
          outageWaitMs: 50,
          outagePausesMs: [10],
        },
        async () => {
          calls++;
          await unreachable();
        },
      );
      const stuck = event();
      await bus!.publish(stuck);
      const letters = await waitFor(
        async () => {
          const found = await bus!.deadLetters('long-outage');
          return found.length > 0 ? found : undefined;
        },
        { what: 'dead letter' },
      );
      expect(letters).toEqual([
        { durable: 'long-outage', event: stuck, error: expect.stringContaining('ECONNREFUSED'), attempts: 2 },
      ]);
      expect(calls).toBeGreaterThan(2);
    });

    it('puts dead letters back for their durable once what failed them is mended, each counted afresh', async () => {
      const [bus] = await make();
      let mended = false;
      const handled: Array<{ id: string; attempt: number }> = [];
      await bus!.consume(
        { durable: 'mended', filter: '>', maxDeliver: 2, redeliveryDelaysMs: [10] },
        async (e, delivery) => {
          if (!mended) throw new Error('a bug, since fixed');
          handled.push({ id: e.id, attempt: delivery.attempt });
        },
      );
      const first = event();
      const second = event();
      await bus!.publish(first);
      await bus!.publish(second);
      await waitFor(async () => (await bus!.deadLetters('mended')).length === 2, {
        what: 'two dead letters',
      });
      expect(await bus!.redrive('nobody-consumes-this')).toBe(0);

      mended = true;
      expect(await bus!.redrive('mended', 1)).toBe(1);
      await waitFor(() => handled.length === 1, { what: 'the first put back and handled' });
      expect(handled).toEqual([{ id: first.id, attempt: 1 }]);
      expect((await bus!.deadLetters('mended')).map((letter) => (letter.event as WireEvent).id)).toEqual([
        second.id,
      ]);
      expect(await bus!.redrive('mended')).toBe(1);
      await waitFor(() => handled.length === 2, { what: 'the second put back and handled' });
      expect(await bus!.deadLetters('mended')).toEqual([]);
    });

    it('dead-letters an event whose data its schema does not read on its first delivery, never retrying it', async () => {
      const [bus] = await make();
      const handled: string[] = [];
      // Retried, the unreadable event would wait a minute before its next delivery.
      await consumeEvents(
        bus!,
        { durable: 'unreadable', maxDeliver: 5, redeliveryDelaysMs: [60_000] },
        {
          'inbound.status': async (e) => {
            handled.push(e.id);
          },
        },
      );
      const unreadable = { ...event('inbound.status'), data: { status: 'seen' } };
      const readable = {
        ...event('inbound.status'),
        data: {
          workspace_id: workspace.id,
          integration_id: randomUUID(),
          provider_message_id: 'wamid.1',
          status: 'delivered',
          error: null,
        },
      };
      await bus!.publish(unreadable);
      await bus!.publish(readable);
      // The workspace's lane's durable: inbound events travel in lanes.
      const { durable } = subscriptionsFor('unreadable', ['inbound.status'])[laneOf(workspace.id)]!;
      const letters = await waitFor(
        async () => {
          const found = await bus!.deadLetters(durable);
          return found.length > 0 ? found : undefined;
        },
        { what: 'the unreadable event among the dead letters' },
      );
      expect(letters).toEqual([
        {
          durable,
          event: unreadable,
          error: expect.stringMatching(
            /^inbound\.status data does not match its schema: workspace_id: .*; status: /,
          ),
          attempts: 1,
        },
      ]);
      await waitFor(() => handled.length === 1, { what: 'the readable event' });
      expect(handled).toEqual([readable.id]);
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
