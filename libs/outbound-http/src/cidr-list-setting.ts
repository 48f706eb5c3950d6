import { z } from 'zod';
import { isCidrList } from './address-policy.js';

/** A config setting holding allowed private ranges (OUTBOUND_ALLOWED_CIDRS), refused at start-up if malformed. */
export const cidrListSetting = z
  .string()
  .refine(isCidrList, { error: 'a comma-separated list of CIDR ranges, e.g. 127.0.0.0/8,10.0.0.0/8' });
