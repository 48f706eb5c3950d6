import { AppError } from '@inbox/contracts';
import { describe, expect, it } from 'vitest';
import { checkAgainstCatalogue, placeholderCount, renderBody, templateComponents } from './template-rules.js';

const send = {
  name: 'promo',
  language: 'pt_BR',
  variables: ['Ana', 10] as Array<string | number>,
  headerMedia: null,
  buttons: null,
};
const entry = {
  name: 'promo',
  language: 'pt_BR',
  status: 'APPROVED',
  body: 'Oi {{1}}, {{2}}% off! {{1}}',
  header_format: null,
};

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof AppError ? [error.status, error.body.meta_error_code] : error;
  }
  return undefined;
};

describe('template rules', () => {
  it('count distinct placeholders and render the body', () => {
    expect(placeholderCount(entry.body)).toBe(2);
    expect(placeholderCount('Sem variáveis')).toBe(0);
    expect(renderBody(entry.body, send.variables)).toBe('Oi Ana, 10% off! Ana');
  });

  it('check name and approval (132001), variables (132000) and the media header (131053)', () => {
    expect(checkAgainstCatalogue(entry, send)).toBe(entry);
    expect(codeOf(() => checkAgainstCatalogue(undefined, send))).toEqual([400, 132001]);
    expect(codeOf(() => checkAgainstCatalogue({ ...entry, status: 'PENDING' }, send))).toEqual([400, 132001]);
    expect(codeOf(() => checkAgainstCatalogue(entry, { ...send, variables: ['Ana'] }))).toEqual([
      400, 132000,
    ]);
    const withImage = { ...entry, header_format: 'IMAGE' };
    expect(codeOf(() => checkAgainstCatalogue(withImage, send))).toEqual([400, 131053]);
    expect(
      codeOf(() =>
        checkAgainstCatalogue(withImage, {
          ...send,
          headerMedia: { type: 'video', link: 'https://x/v.mp4' },
        }),
      ),
    ).toEqual([400, 131053]);
    expect(
      codeOf(() =>
        checkAgainstCatalogue(entry, { ...send, headerMedia: { type: 'image', link: 'https://x/i.png' } }),
      ),
    ).toEqual([400, 131053]);
    expect(
      checkAgainstCatalogue(withImage, { ...send, headerMedia: { type: 'image', link: 'https://x/i.png' } }),
    ).toBe(withImage);
  });

  it('build every component: header with link and filename, body in order as text, one per dynamic button', () => {
    expect(
      templateComponents({
        ...send,
        headerMedia: { type: 'document', link: 'https://x/f.pdf', filename: 'f.pdf' },
        buttons: [
          { index: 0, type: 'url', text: 'abc' },
          { index: 1, type: 'quick_reply', payload: 'yes' },
        ],
      }),
    ).toEqual([
      {
        type: 'header',
        parameters: [{ type: 'document', document: { link: 'https://x/f.pdf', filename: 'f.pdf' } }],
      },
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'Ana' },
          { type: 'text', text: '10' },
        ],
      },
      { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'abc' }] },
      {
        type: 'button',
        sub_type: 'quick_reply',
        index: '1',
        parameters: [{ type: 'payload', payload: 'yes' }],
      },
    ]);
  });
});
