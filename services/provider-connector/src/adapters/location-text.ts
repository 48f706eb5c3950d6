import { valueAt } from './text-at.js';

/** A shared place as each provider names its parts; every part is untrusted and may be missing. */
export interface SharedPlace {
  name?: unknown;
  address?: unknown;
  latitude?: unknown;
  longitude?: unknown;
}

/** A `{ latitude, longitude }` object's two numbers (Telegram's Location), whatever else it holds. */
export const pointOf = (value: unknown): SharedPlace => ({
  latitude: valueAt(value, 'latitude'),
  longitude: valueAt(value, 'longitude'),
});

const words = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');

/** Decimal degrees as text: digits, a point, digits; nothing else `Number()` reads (hex, exponents). */
const DECIMAL = /^-?\d{1,3}(\.\d+)?$/;

// Providers send numbers; a decimal string is taken too, since some bridges pass them through as text.
function degrees(value: unknown, limit: number): number | undefined {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && DECIMAL.test(value.trim())
        ? Number(value)
        : NaN;
  return Number.isFinite(number) && Math.abs(number) <= limit ? number : undefined;
}

/**
 * Where a pin is, as `latitude, longitude` in decimal degrees: six decimals are a tenth of a metre,
 * more than any phone's fix, and keep a hostile sender from padding the text with digits.
 */
function coordinates(place: SharedPlace): string | undefined {
  const latitude = degrees(place.latitude, 90);
  const longitude = degrees(place.longitude, 180);
  if (latitude === undefined || longitude === undefined) return undefined;
  return `${Number(latitude.toFixed(6))}, ${Number(longitude.toFixed(6))}`;
}

/**
 * A location message's text: the place's name and address where it has them, then its coordinates, so
 * a receiver (an agent, a bot) knows where the customer is even when they shared a bare pin, the usual
 * "send my current location", which has neither name nor address. `Padaria Real, Av. Paulista 1578
 * (-23.5613, -46.6565)`; a bare pin is `-23.5613, -46.6565`.
 */
export function locationText(place: SharedPlace): string {
  const name = words(place.name);
  const address = words(place.address);
  const said = [name, address !== name ? address : ''].filter(Boolean).join(', ');
  const at = coordinates(place);
  if (!at) return said;
  return said ? `${said} (${at})` : at;
}
