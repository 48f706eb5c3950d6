import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const textsFile = 'libs/contracts/src/error-texts.ts';
// The sandbox emulates third-party providers, so it answers in their words, not ours.
const speaksForOthers = 'services/provider-sandbox/';

// Letters and words that only a Portuguese text would hold; English log messages and identifiers do not.
const portuguese = /[ãõçéíóúêâà]|\bdeve\b|inválid|obrigatóri|\bnão\b/i;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

function sourceRoots(): string[] {
  const packages = (parent: string) =>
    readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(root, parent, entry.name, 'src'));
  return [...packages('services'), ...packages('libs'), join(root, 'runtime/src')].filter((dir) => {
    try {
      return readdirSync(dir).length > 0;
    } catch {
      return false;
    }
  });
}

/** Each string literal or template piece of the code that reads as Portuguese; comments are never seen. */
function inlineTexts(path: string, code: string): string[] {
  const source = ts.createSourceFile(path, code, ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node)) &&
      portuguese.test(node.text)
    ) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${path}:${line} ${JSON.stringify(node.text)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

it(`keeps every text a client reads in ${textsFile}, none inline`, () => {
  const files = sourceRoots()
    .flatMap(sourceFiles)
    .filter((path) => path !== textsFile && !path.startsWith(speaksForOthers));
  expect(files.length).toBeGreaterThan(50);
  expect(files.flatMap((path) => inlineTexts(path, readFileSync(join(root, path), 'utf8')))).toEqual([]);
});

it('finds a text in any kind of literal, but not in a comment or a log message', () => {
  const code = [
    '// O webhook não existe: a comment may say so.',
    "logger.warn({ host }, 'webhook url refused');",
    "throw AppError.notFound('Webhook não encontrado');",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the sample is code that holds a template literal
    'throw AppError.badRequest(`${field} deve ser booleano`);',
    'const text = "email inválido";',
  ].join('\n');
  expect(inlineTexts('sample.ts', code)).toEqual([
    'sample.ts:3 "Webhook não encontrado"',
    'sample.ts:4 " deve ser booleano"',
    'sample.ts:5 "email inválido"',
  ]);
});
