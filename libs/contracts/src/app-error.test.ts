import { describe, expect, it } from 'vitest';
import { AppError } from './app-error.js';

describe('AppError', () => {
  it('captures no stack trace for a refusal the caller caused, and keeps one for a fault', () => {
    const limit = Error.stackTraceLimit;
    const refusal = AppError.badRequest('Campo obrigatório: phone');
    expect(refusal.stack).toBe('AppError: Campo obrigatório: phone');
    expect(Error.stackTraceLimit).toBe(limit);
    const fault = AppError.internal(new Error('boom'));
    expect(fault.stack?.split('\n').length).toBeGreaterThan(1);
    expect(fault.stack).toMatch(/app-error\.test\.ts/);
  });
});
