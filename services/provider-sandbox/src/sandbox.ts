import express, { type ErrorRequestHandler, type Express } from 'express';
import { createAltA } from './alt-a.js';
import { createAltB } from './alt-b.js';
import { createBot } from './bot.js';
import type { ChannelEmulator, ChannelFactory, SandboxStores } from './channel-emulator.js';
import { createChatOfficial } from './chat-official.js';
import { CHAT_OFFICIAL } from './chat-official-state.js';
import { clientErrorStatus } from './client-error-status.js';
import { ControlError } from './control-error.js';
import { createControls } from './controls.js';
import { ConversationWindows } from './conversation-windows.js';
import { CredentialBook } from './credentials.js';
import { DEFAULT_FAULT_HOLD_MS, FaultBook } from './faults.js';
import { jsonBody } from './json-body.js';
import { createMarket } from './market.js';
import { createPhoto, createSocial } from './meta-messaging.js';
import { Redeliveries } from './redelivery.js';
import { SentLog } from './sent-log.js';
import { whatsappNumber } from './whatsapp-number.js';
import { NumbersWithoutWhatsApp } from './without-whatsapp.js';

export interface SandboxOptions {
  /** Used for every call the sandbox makes (webhooks, verification handshakes); defaults to the global fetch. */
  fetchImpl?: typeof fetch;
  /** How long a `timeout` fault holds a call before answering 504; 30 s unless a test needs it shorter. */
  faultHoldMs?: number;
  /**
   * `refuse` (the default) refuses http callback URLs as the real providers do (and, for Telegram, ports
   * other than 443, 80, 88 and 8443); `allow` accepts them, for local stacks whose connector serves plain
   * HTTP on a port of its own.
   */
  httpCallbacks?: 'allow' | 'refuse';
  /** How many sends `GET /_sandbox/sent` keeps, newest last (DEFAULT_SENT_LOG_LIMIT unless set). */
  sentLogLimit?: number;
  /**
   * The providers' redelivery waits times this (1, the default, is their own: Evolution's first is 5 s);
   * tests shrink it.
   */
  redeliveryDelayScale?: number;
}

export interface Sandbox {
  app: Express;
  reset(): void;
  /** Settles once no notification the emulated providers post of their own accord is under way. */
  idle(): Promise<void>;
  /** Settles once no redelivery is under way or waiting (at the providers' own pace, minutes). */
  redelivered(): Promise<void>;
}

/** Every emulated provider; a new channel is one more factory here. */
const CHANNEL_FACTORIES: readonly ChannelFactory[] = [
  createAltA,
  createAltB,
  createChatOfficial,
  createBot,
  createMarket,
  createSocial,
  createPhoto,
];

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const fetchImpl = options.fetchImpl ?? fetch;
  const stores: SandboxStores = {
    sent: new SentLog(options.sentLogLimit),
    faults: new FaultBook(),
    credentials: new CredentialBook(),
    windows: new ConversationWindows({ [CHAT_OFFICIAL]: whatsappNumber }),
    withoutWhatsApp: new NumbersWithoutWhatsApp(),
    faultHoldMs: options.faultHoldMs ?? DEFAULT_FAULT_HOLD_MS,
    allowHttpCallbacks: options.httpCallbacks === 'allow',
  };
  const redeliveries = new Redeliveries(fetchImpl, options.redeliveryDelayScale ?? 1);
  const channels = new Map<string, ChannelEmulator>();
  for (const factory of CHANNEL_FACTORIES) {
    const emulator = factory(stores, fetchImpl);
    channels.set(emulator.channel, emulator);
  }

  function reset(): void {
    stores.sent.clear();
    stores.faults.clear();
    stores.credentials.clear();
    stores.windows.clear();
    stores.withoutWhatsApp.clear();
    for (const emulator of channels.values()) emulator.reset();
    redeliveries.reset();
  }

  const app = express();
  app.disable('x-powered-by');
  // Keeps nothing durable and depends on nothing, so alive is ready.
  app.get(['/healthz', '/readyz'], (_req, res) => {
    res.json({ status: 'ok' });
  });
  // No spans: a real provider is not in our traces, and the connector's client span of each call already
  // shows its time and its answer.
  app.use('/_sandbox', jsonBody, createControls({ stores, channels, fetchImpl, redeliveries, reset }));
  for (const emulator of channels.values()) {
    if (emulator.controlRouter) app.use('/_sandbox', emulator.controlRouter);
  }
  for (const emulator of channels.values()) app.use(`/${emulator.channel}`, emulator.router);
  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}` });
  });
  app.use(answerError);

  async function idle(): Promise<void> {
    await Promise.all([...channels.values()].map((emulator) => emulator.idle?.()));
  }

  return { app, reset, idle, redelivered: () => redeliveries.settled() };
}

const answerError: ErrorRequestHandler = (error: unknown, _req, res, next) => {
  if (res.headersSent) {
    next(error);
    return;
  }
  if (error instanceof ControlError) {
    res.status(error.status).json({ error: error.message });
    return;
  }
  // body-parser's errors (bad JSON, body too large) carry their own 4xx status and a safe message.
  const status = clientErrorStatus(error);
  if (status !== undefined && error instanceof Error) {
    res.status(status).json({ error: error.message });
    return;
  }
  console.error('provider-sandbox: unexpected error', error);
  res.status(500).json({ error: 'internal error' });
};
