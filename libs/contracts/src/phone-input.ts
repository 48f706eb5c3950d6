/** Separators people type inside phone numbers; the spec tolerates them. */
const separators = /[\s\-.()]/g;

/**
 * The spec's phone format: E.164 with a leading `+`, or digits only, at least 10 digits (and, as E.164
 * allows, at most 15). Returns the cleaned input (`+` kept) or undefined when it does not qualify.
 */
export function cleanPhoneInput(raw: string): string | undefined {
  const cleaned = raw.replace(separators, '');
  return /^\+?\d{10,15}$/.test(cleaned) ? cleaned : undefined;
}
