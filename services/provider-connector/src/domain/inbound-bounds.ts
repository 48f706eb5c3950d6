import { createHash } from 'node:crypto';
import { providerUserIdMaxChars } from '@inbox/contracts';
import { storableText } from '@inbox/db';
import { z } from 'zod';
import type { InboundMessage, StatusUpdate, Watermark } from '../adapters/channel-adapter.js';

/**
 * The most of each provider-given field the connector takes in. A callback may carry up to 1 MiB
 * (providers batch), but one message becomes one event, and an event must stay well under the outbox's
 * bound: these keep the worst case (every character escaped) near 100 KiB. WhatsApp itself caps a text
 * at 4096 characters, so a longer one is a provider bug or a hostile caller, and is cut, not refused:
 * refusing would make the provider retry the same callback forever.
 */
export const inboundBounds = {
  textChars: 16_384,
  nameChars: 256,
  /** Longer provider ids are replaced by a digest, so two of them never collide. */
  providerIdChars: 256,
  phoneChars: 32,
  statusErrorChars: 1_000,
} as const;

export interface Truncation {
  field: 'text' | 'name';
  originalLength: number;
}

/** A provider message id that fits a text column and an index entry, and stays unique. */
export function storableProviderId(id: string): string {
  if (id.length <= inboundBounds.providerIdChars) return storableText(id);
  return `sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/** The message with every field storable and within its bound, and what had to be cut. */
export function boundMessage(message: InboundMessage): { message: InboundMessage; truncated: Truncation[] } {
  const truncated: Truncation[] = [];
  const cut = (field: Truncation['field'], value: string, maxChars: number) => {
    if (value.length > maxChars) truncated.push({ field, originalLength: value.length });
    return storableText(value, maxChars);
  };
  return {
    message: {
      providerMessageId: storableProviderId(message.providerMessageId),
      // A provider's user id is never cut (a cut id names another user): one longer than the contracts
      // take is left out by the schema check that follows. A number longer than this is no number either.
      from:
        message.keyedBy === 'user_id'
          ? storableText(message.from)
          : storableText(message.from, inboundBounds.phoneChars),
      ...(message.keyedBy ? { keyedBy: message.keyedBy } : {}),
      // Only a note beside the number: one longer than the contracts take is dropped, the message kept.
      ...(message.userId !== undefined && message.userId.length <= providerUserIdMaxChars
        ? { userId: storableText(message.userId) }
        : {}),
      name: message.name === null ? null : cut('name', message.name, inboundBounds.nameChars),
      text: cut('text', message.text, inboundBounds.textChars),
      type: message.type,
      sentAt: eventTime(message.sentAt, false),
    },
    truncated,
  };
}

export function boundStatus(status: StatusUpdate): StatusUpdate {
  const { errorCode, at } = status;
  return {
    providerMessageId: storableProviderId(status.providerMessageId),
    status: status.status,
    error: status.error === null ? null : storableText(status.error, inboundBounds.statusErrorChars),
    // An integer column holds it; anything else a provider calls a code is kept in the error text only.
    errorCode: Number.isSafeInteger(errorCode) && Math.abs(errorCode!) <= 2 ** 31 - 1 ? errorCode! : null,
    // Ahead of our clock, too: when it reached us is the better guess.
    at: eventTime(at, true),
    // Ours are UUIDs; anything else echoed back is someone else's text and names nothing of ours.
    ...(status.ourMessageId !== undefined && ourIdShape.safeParse(status.ourMessageId).success
      ? { ourMessageId: status.ourMessageId.toLowerCase() }
      : {}),
  };
}

/** A watermark with a storable user id (never cut: the event's schema refuses a longer one) and a time an event can carry. */
export function boundWatermark(watermark: Watermark): Watermark {
  return { ...watermark, userId: storableText(watermark.userId), upTo: eventTime(watermark.upTo, true) };
}

/** The shape of our message ids, as the contracts check them everywhere else. */
const ourIdShape = z.uuid();

// What the inbound events' times must be (their schemas'): an ISO date-time, with a four-digit year.
const isoDateTime = z.iso.datetime();

/**
 * A provider's time as an event can carry it, or when it reached us. Out of Date's range, toISOString
 * throws and the callback failed; past the year 9999 or before the year 1 it is no ISO date-time, and
 * messaging dead-lettered the event after the message had been taken in as seen: lost.
 */
function eventTime(at: Date | undefined, notAfterNow: boolean): Date {
  const ms = at?.getTime();
  if (ms === undefined || Number.isNaN(ms) || (notAfterNow && ms > Date.now())) return new Date();
  return isoDateTime.safeParse(at!.toISOString()).success ? at! : new Date();
}
