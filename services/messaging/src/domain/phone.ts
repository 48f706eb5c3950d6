import { cleanPhoneInput } from '@inbox/contracts';

/**
 * Normalises a phone to E.164 (see docs/decisions/0006-phone-normalisation.md): `+` numbers are kept as
 * given; 10 or 11 digits are national numbers and take the workspace's country code; 12 or more digits
 * already carry one.
 */
export function normalisePhone(raw: string, defaultCountryCode: string): string | undefined {
  const cleaned = cleanPhoneInput(raw);
  if (!cleaned) return undefined;
  if (cleaned.startsWith('+')) return canonicalPhone(cleaned);
  if (cleaned.length <= 11) {
    const national = `+${defaultCountryCode}${cleaned}`;
    return national.length <= 16 ? canonicalPhone(national) : undefined;
  }
  return canonicalPhone(`+${cleaned}`);
}

/** A Brazilian mobile written without its ninth digit: a two-digit area code, then eight digits from 6. */
const brazilianMobileWithoutNine = /^\+55([1-9]{2})([6-9]\d{7})$/;

/**
 * One number, one form: a Brazilian mobile without its ninth digit gets it. Every Brazilian mobile has
 * had nine digits since 2016, but WhatsApp names many by eight (every account in area codes 31 and above,
 * as Evolution's createJid has it, and Meta's `wa_id` "may not always match" the number): a customer the
 * API wrote to as +55 31 98888-7777 answered as 553188887777 and became a second contact, their reply in
 * a second conversation. An eight-digit number from 2 to 5 is a landline and stays as it is.
 */
export function canonicalPhone(e164: string): string {
  return e164.replace(brazilianMobileWithoutNine, '+55$19$2');
}

/**
 * The form a Brazilian mobile was stored in before canonicalPhone, when it came as WhatsApp named it:
 * without its ninth digit. Undefined for a number that has no such other form.
 */
export function formBeforeCanonical(canonical: string): string | undefined {
  const match = /^\+55([1-9]{2})9([6-9]\d{7})$/.exec(canonical);
  return match ? `+55${match[1]}${match[2]}` : undefined;
}
