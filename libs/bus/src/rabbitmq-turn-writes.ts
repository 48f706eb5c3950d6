import type { Socket } from 'node:net';

/** What of amqplib's Connection this reaches: its Mux, which writes the channels' frames to the socket. */
interface MuxingConnection {
  muxer?: { out?: Socket; _readIncoming?: () => void };
}

/**
 * amqplib's Mux writes, at `setImmediate`, what every channel has queued since, but one `socket.write`
 * per chunk: a turn that publishes ten messages made ten system calls and woke the broker ten times.
 * Corked around that pass, they leave in one `writev`, as a turn's NATS writes do (nats-turn-writes.ts).
 * Nothing waits longer: the pass writes what it would have written, in the same order, and uncorks at
 * its end; a socket the pass fills still answers `false`, so the Mux stops and waits for 'drain'.
 *
 * Answers whether it could: a Mux without the parts this relies on is left as amqplib made it.
 */
export function coalesceTurnWrites(connection: unknown): boolean {
  const muxer = (connection as MuxingConnection | null)?.muxer;
  const read = muxer?._readIncoming;
  const socket = muxer?.out;
  if (typeof read !== 'function' || typeof socket?.cork !== 'function') return false;
  muxer!._readIncoming = () => {
    socket.cork();
    try {
      read.call(muxer);
    } finally {
      socket.uncork();
    }
  };
  return true;
}
