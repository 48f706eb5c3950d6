/**
 * The provider error codes a metric names; any other is `other`. The code comes from a status callback,
 * which a tenant can sign with its own app secret and fill with any number: as a label value, each new
 * one was a series of its own, and past the SDK's 2,000 combinations a metric folds every later one,
 * other tenants' real failures included, into one overflow series. These are the codes of Meta's Cloud
 * API error-code reference (developers.facebook.com/documentation/business-messaging/whatsapp/support/
 * error-codes), the one provider whose statuses carry codes. The stored message keeps its exact code.
 */
const documentedCodes = new Set([
  0, 1, 2, 3, 4, 10, 33, 100, 190, 200, 368, 470, 80007, 130429, 130472, 130497, 131000, 131005, 131008,
  131009, 131016, 131021, 131026, 131031, 131037, 131042, 131045, 131047, 131048, 131049, 131050, 131051,
  131052, 131053, 131056, 131057, 132000, 132001, 132005, 132007, 132012, 132015, 132016, 132068, 132069,
  133000, 133004, 133005, 133006, 133008, 133009, 133010, 133015, 133016, 134011, 135000, 2388103,
]);

export function errorCodeLabel(code: number | null | undefined): string {
  if (code === null || code === undefined) return 'none';
  return documentedCodes.has(code) ? String(code) : 'other';
}
