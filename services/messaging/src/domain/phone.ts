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

/** A Mexican number with the mobile prefix 1 that Mexico's plan dropped in 2019: ten digits from 2. */
const mexicanWithMobilePrefix = /^\+521([2-9]\d{9})$/;

/**
 * One number, one form.
 * - A Brazilian mobile without its ninth digit gets it. Every Brazilian mobile has had nine digits since
 *   2016, but WhatsApp names many by eight (every account in area codes 31 and above, as Evolution's
 *   createJid has it, and Meta's `wa_id` "may not always match" the number): a customer the API wrote to as
 *   +55 31 98888-7777 answered as 553188887777 and became a second contact, their reply in a second
 *   conversation. An eight-digit number from 2 to 5 is a landline and stays as it is.
 * - A Mexican number loses the 1 after +52. Mexico's numbers have been ten digits with no mobile prefix
 *   since 2019, but WhatsApp names most Mexican mobiles with it (its FAQ 1294841057948784, which
 *   Evolution's whatsappNumber follows; Meta's `wa_id` carries it): +52 55 1234 5678 answers as
 *   5215512345678. No Mexican area code starts with 1, so the 1 is never part of the number.
 */
export function canonicalPhone(e164: string): string {
  return e164.replace(brazilianMobileWithoutNine, '+55$19$2').replace(mexicanWithMobilePrefix, '+52$1');
}

/**
 * The other form a contact of this canonical number may be stored under, undefined for a number that has
 * none:
 * - a Brazilian mobile without its ninth digit, or a Mexican one with its 1: the form a callback named it by
 *   before canonicalPhone gave it one form;
 * - an Argentine number with or without the 9 after +54, each the twin of the other. Argentina's mobiles
 *   are +54 9 and the area code in E.164 and WhatsApp names them so, yet they are as often written
 *   without the 9, the form a landline takes. Fixed and mobile lines share one plan of ten-digit numbers
 *   (area codes 11 and from 2 or 3), so the two forms are one line, but which one a WhatsApp account
 *   carries cannot be told from the number (a landline's business account has no 9): neither form is
 *   rewritten into the other, and a contact is found under either.
 */
export function otherStoredForm(canonical: string): string | undefined {
  const brazilian = /^\+55([1-9]{2})9([6-9]\d{7})$/.exec(canonical);
  if (brazilian) return `+55${brazilian[1]}${brazilian[2]}`;
  const mexican = /^\+52([2-9]\d{9})$/.exec(canonical);
  if (mexican) return `+521${mexican[1]}`;
  const argentine = argentineLine.exec(canonical);
  if (argentine) return argentine[1] ? `+54${argentine[2]}` : `+549${argentine[2]}`;
  return undefined;
}

/** An Argentine number of area code 11 or from 2 or 3, with or without the 9 of its mobile form. */
const argentineLine = /^\+54(9?)(11\d{8}|[23]\d{9})$/;

/**
 * The line a number's twin forms share (an Argentine number's form without its 9), undefined for a number
 * with no twin. Both forms are canonical, so the contacts' unique key cannot tell that two first messages
 * racing, one in each form, are one customer: what does is a lock on the line, taken before the contact is
 * looked up (ConversationStore.lockedStoredPhone). A Brazilian or Mexican number's other form is never
 * written anew, so it needs none.
 */
export function twinLine(canonical: string): string | undefined {
  const argentine = argentineLine.exec(canonical);
  return argentine ? `+54${argentine[2]}` : undefined;
}
