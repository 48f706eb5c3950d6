// The ceiling a bench compares against, in a process of its own like each service: `node:http` or express
// answering a small JSON body after reading the request's. Prints its port on stdout.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

const kind = process.argv[2];
const answer = JSON.stringify({ success: true, message_id: '00000000-0000-4000-8000-000000000000' });

const server =
  kind === 'express'
    ? express()
        .use(express.json())
        .post('/', (_req, res) => {
          res.json(JSON.parse(answer));
        })
        .listen(0, '127.0.0.1')
    : createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
        });
      }).listen(0, '127.0.0.1');
server.on('listening', () => console.log((server.address() as AddressInfo).port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
