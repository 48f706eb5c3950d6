import { cleanPhoneInput } from '@inbox/contracts';

/**
 * Normalises a phone to E.164 (see docs/decisions/0006-phone-normalisation.md): `+` numbers are kept as
 * given; 10 or 11 digits are national numbers and take the workspace's country code; 12 or more digits
 * already carry one.
 */
export function normalisePhone(raw: string, defaultCountryCode: string): string | undefined {
  const cleaned = cleanPhoneInput(raw);
  if (!cleaned) return undefined;
  if (cleaned.startsWith('+')) return cleaned;
  if (cleaned.length <= 11) {
    const national = `+${defaultCountryCode}${cleaned}`;
    return national.length <= 16 ? national : undefined;
  }
  return `+${cleaned}`;
}
