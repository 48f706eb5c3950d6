import { z } from 'zod';

type JsonSchema = Record<string, unknown>;

// zod writes a nullable schema as `anyOf: [schema, {type: null}]`; the OpenAPI generator takes a schema
// given this way only when it names its own `type`, so nullability goes into the type list instead.
function nullAsType(schema: JsonSchema): JsonSchema {
  const options = schema.anyOf as JsonSchema[] | undefined;
  if (options?.length !== 2) return schema;
  const nullIndex = options.findIndex((option) => option.type === 'null' && Object.keys(option).length === 1);
  const other = options[1 - nullIndex];
  if (nullIndex < 0 || typeof other?.type !== 'string') return schema;
  const { anyOf: _, ...rest } = schema;
  return { ...rest, ...other, type: [other.type, 'null'] };
}

// zod bounds every integer by the safe range; documented, that bound says nothing a reader can use.
function withoutSafeIntegerBounds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSafeIntegerBounds);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(
        ([key, bound]) =>
          !(key === 'maximum' && bound === Number.MAX_SAFE_INTEGER) &&
          !(key === 'minimum' && bound === Number.MIN_SAFE_INTEGER),
      )
      .map(([key, inner]) => [key, withoutSafeIntegerBounds(inner)]),
  );
}

/**
 * A field that judges its input itself, so that each way of being wrong answers its own text (an
 * `unknown` with a transform, say), keeps that validation; the OpenAPI document shows `shape`, the
 * input the field accepts. `shape` also carries the field's nullability.
 */
export function documentedAs<T extends z.ZodType>(validator: T, shape: z.ZodType): T {
  const { $schema: _, ...schema } = z.toJSONSchema(shape, { io: 'input', target: 'draft-2020-12' });
  return validator.meta(nullAsType(withoutSafeIntegerBounds(schema) as JsonSchema));
}
