/**
 * Where the sandbox's customers share their location from, for every channel's location message: a place
 * picked from the app's list (a control's `location`) comes with a name (the control's text) and this
 * address; a bare pin ("send your current location", a control's `pin`) with neither.
 */
export const SHARED_PIN = { latitude: -23.5613, longitude: -46.6565, address: 'Av. Paulista, 1578' } as const;
