import { describe, expect, it } from 'vitest';
import { locationText, pointOf } from './location-text.js';

describe('locationText', () => {
  it('names a place and says where it is', () => {
    expect(
      locationText({
        name: 'Padaria Real',
        address: 'Av. Paulista, 1578',
        latitude: -23.5613,
        longitude: -46.6565,
      }),
    ).toBe('Padaria Real, Av. Paulista, 1578 (-23.5613, -46.6565)');
    expect(locationText({ address: 'Rua A', latitude: 1, longitude: 2 })).toBe('Rua A (1, 2)');
    // WhatsApp repeats the name as the address for some places.
    expect(locationText({ name: 'Loja', address: 'Loja', latitude: 0, longitude: 0 })).toBe('Loja (0, 0)');
  });

  it('gives a bare pin its coordinates, and nothing for nothing', () => {
    expect(locationText({ latitude: -23.5613, longitude: -46.6565 })).toBe('-23.5613, -46.6565');
    expect(locationText({ latitude: '-8.806', longitude: '115.13' })).toBe('-8.806, 115.13');
    expect(locationText({})).toBe('');
    expect(locationText(pointOf({ latitude: 10, longitude: 20, horizontal_accuracy: 5 }))).toBe('10, 20');
    expect(pointOf('somewhere')).toEqual({});
  });

  it('takes no coordinates a sender made up, nor more digits than a fix has', () => {
    expect(locationText({ name: 'Aqui', latitude: 91, longitude: 0 })).toBe('Aqui');
    expect(locationText({ latitude: 0, longitude: -180.5 })).toBe('');
    expect(locationText({ latitude: 'norte', longitude: 1 })).toBe('');
    expect(locationText({ latitude: '', longitude: 1 })).toBe('');
    expect(locationText({ latitude: '0x10', longitude: 1 })).toBe('');
    expect(locationText({ latitude: '1e1', longitude: 1 })).toBe('');
    expect(locationText({ latitude: Number.NaN, longitude: 1 })).toBe('');
    expect(locationText({ latitude: { lat: 1 }, longitude: 1 })).toBe('');
    // Z-API's docs show -99.99... as a placeholder.
    expect(locationText({ latitude: -99.9999, longitude: 1 })).toBe('');
    expect(locationText({ latitude: 12.3456789012345, longitude: -45.000000049 })).toBe('12.345679, -45');
    expect(locationText({ name: 7, address: null, latitude: 1, longitude: 1 })).toBe('1, 1');
  });
});
