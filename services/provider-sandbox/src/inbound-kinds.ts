import { ControlError } from './control-error.js';

/**
 * The kinds of message a channel's inbound control can send (its `type`): the list, and the control's
 * `type` read as one of them, or refused naming them.
 */
export function inboundKinds<const K extends readonly [string, ...string[]]>(channel: string, kinds: K) {
  return {
    kinds,
    of(value: string): K[number] {
      if ((kinds as readonly string[]).includes(value)) return value as K[number];
      throw new ControlError(400, `${channel} inbound type must be one of ${kinds.join(', ')}`);
    },
  };
}
