import { InProcessBus } from '../src/index.js';
import { busContract } from './bus-contract.js';

// In one process every "replica" is the same bus object: handlers and consumers registered twice share
// the work exactly as two NATS connections in one queue group or durable do.
busContract('in-process', async (replicas) => {
  const bus = new InProcessBus();
  return Array.from({ length: replicas }, () => bus);
});
