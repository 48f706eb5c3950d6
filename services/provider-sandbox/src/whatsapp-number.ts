/**
 * The number WhatsApp names an account by, in a JID or a `wa_id`, whichever form the number was written in:
 * - a Mexican mobile with a 1 after the country code, and an Argentine one with a 9: WhatsApp's FAQ
 *   1294841057948784 writes them so, Evolution API's whatsappNumber takes either form from WhatsApp's
 *   check and sends to and answers with the JID it got (createJid drops the digit, WhatsApp's JID has
 *   it), and Meta's `wa_id` carries it (5215512345678 for +52 55 1234 5678, 5491123456789 for
 *   +54 11 2345-6789);
 * - a Brazilian mobile in area codes 31 and above without its ninth digit when the rest starts with 7 to 9,
 *   as Evolution's createJid writes it (src/utils/createJid.ts, formatBRNumber): 553188887777 for
 *   +55 31 98888-7777.
 */
export function whatsappNumber(digits: string): string {
  const mexican = /^521?([2-9]\d{9})$/.exec(digits);
  if (mexican) return `521${mexican[1]}`;
  const argentine = /^549?(11\d{8}|[23]\d{9})$/.exec(digits);
  if (argentine) return `549${argentine[1]}`;
  const brazilian = /^55(\d{2})\d(\d{8})$/.exec(digits);
  if (brazilian && Number(brazilian[1]) >= 31 && Number(brazilian[2]![0]) >= 7)
    return `55${brazilian[1]}${brazilian[2]}`;
  return digits;
}
