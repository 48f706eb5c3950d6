import { once } from 'node:events';
import { connect } from 'node:net';
import express from 'express';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { listen } from '../src/index.js';

describe('listen().close()', () => {
  it('finishes the request in flight, closes kept-alive connections promptly, and takes no new work', async () => {
    const app = express();
    app.get('/slow', (_req, res) => {
      setTimeout(() => res.json({ done: true }), 300);
    });
    app.get('/fast', (_req, res) => {
      res.json({ done: true });
    });
    const server = await listen(app, 0, '127.0.0.1');
    const agent = new Agent({ keepAliveTimeout: 60_000, connections: 1 });
    // Warm one kept-alive connection, then start a slow request on it.
    await (await request(`${server.url}/fast`, { dispatcher: agent })).body.dump();
    const slow = request(`${server.url}/slow`, { dispatcher: agent });
    await new Promise((resolve) => setTimeout(resolve, 50));

    const started = Date.now();
    const closed = server.close();
    const answer = await slow;
    expect(answer.statusCode).toBe(200);
    expect(answer.headers.connection).toBe('close');
    expect(await answer.body.json()).toEqual({ done: true });
    await closed;
    // Well below the five-second keep-alive timeout the server would otherwise wait for.
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(request(`${server.url}/fast`, { dispatcher: agent })).rejects.toThrow();
    await agent.close();
  });

  it('answers 408 and closes a connection whose request does not arrive whole within its bound', async () => {
    const app = express();
    app.post('/hook', express.raw({ type: () => true }), (_req, res) => {
      res.json({ done: true });
    });
    const server = await listen(app, 0, '127.0.0.1', {
      headersTimeoutMs: 300,
      requestTimeoutMs: 500,
      checkIntervalMs: 100,
    });
    try {
      // A body announced and never sent in full, as a caller trickling it would.
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString();
      });
      socket.write('POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\npartial');
      await once(socket, 'close');
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await server.close();
    }
  });
});
