/**
 * The number WhatsApp names an account by in a JID, as Evolution API's createJid writes it
 * (src/utils/createJid.ts, formatMXOrARNumber and formatBRNumber): a Mexican or Argentine mobile of 13
 * digits without the digit after the country code, and a Brazilian mobile in area codes 31 and above
 * without its ninth digit when the rest starts with 7 to 9 (553188887777 for +55 31 98888-7777).
 */
export function whatsappNumber(digits: string): string {
  if ((digits.startsWith('52') || digits.startsWith('54')) && digits.length === 13)
    return digits.slice(0, 2) + digits.slice(3);
  const brazilian = /^55(\d{2})\d(\d{8})$/.exec(digits);
  if (brazilian && Number(brazilian[1]) >= 31 && Number(brazilian[2]![0]) >= 7)
    return `55${brazilian[1]}${brazilian[2]}`;
  return digits;
}
