/** Providers and the sent log key recipients by bare digits, so `+55 11 ...` and `5511...` match. */
export function toDigits(value: string): string {
  return value.replace(/\D/g, '');
}
