import { Type, type Static, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import type { TLocalizedValidationError } from "typebox/error";
import { Settings } from "typebox/system";
import { Value } from "typebox/value";

/** One way a value fails its schema. */
export interface SchemaProblem {
  /** Where, from the value's top: property names, and indices into arrays. */
  path: Array<string | number>;
  message: string;
  /**
   * The value there is not of its type at all: absent, of another type, not one of its choices, not
   * a whole number where one is due. A rule that reads it (one across fields, or across an
   * object's) cannot run on it.
   */
  untyped: boolean;
}

/**
 * A TypeBox schema's check of a value, each failure worded as Mixdown's settings and files have
 * always been checked ("Invalid input: expected number, received NaN", "Too small: expected
 * string to have >=16 characters"), found all at once and listed in the schema's order.
 */
export class SchemaCheck<S extends TSchema> {
  #compiled: ReturnType<typeof Compile<S>> | undefined;

  constructor(readonly schema: S) {}

  /** Compiled on first use: a process that never reads the file does not pay for it. */
  get #validator() {
    return (this.#compiled ??= Compile(this.schema));
  }

  check(value: unknown): value is Static<S> {
    return this.#validator.Check(value);
  }

  /** Every problem of `value`, none when it passes. */
  problems(value: unknown): SchemaProblem[] {
    if (this.check(value)) return [];
    const errors = withoutErrorLimit(() => this.#validator.Errors(value));
    return this.inOrder(value, describeErrors(this.schema, errors, value));
  }

  /**
   * Problems of `value` (the schema's own and those of rules beyond it) in the schema's order: by
   * property as the schema declares them, by index in arrays, by key as written in records, a
   * place's own problems after those inside it. Problems of one place keep the order given.
   */
  inOrder(value: unknown, problems: SchemaProblem[]): SchemaProblem[] {
    const ranked = problems.map((problem) => ({ problem, rank: rankOf(this.schema, value, problem.path) }));
    ranked.sort((a, b) => compareRanks(a.rank, b.rank));
    return ranked.map(({ problem }) => problem);
  }
}

/** Whether `problems` leave the value at `path` (and all within it) of its type. */
export function typedAt(problems: SchemaProblem[], path: Array<string | number>): boolean {
  return !problems.some((p) => p.untyped && path.every((key, i) => p.path[i] === key));
}

/** An absolute URL: text `new URL()` takes once the spaces around it are trimmed, of `protocol` when one is named. */
export const Url = (protocol?: string) =>
  Type.Refine(
    Type.String(),
    (text) => {
      const url = URL.parse(text.trim());
      return url !== null && (protocol === undefined || url.protocol === `${protocol}:`);
    },
    () => "Invalid URL",
  );

/**
 * TypeBox stops gathering errors at a process-wide limit (8 by default); a file with more problems
 * than that still has each one named. The limit is lifted for this one synchronous call only.
 */
function withoutErrorLimit(errors: () => TLocalizedValidationError[]): TLocalizedValidationError[] {
  const { maxErrors } = Settings.Get();
  Settings.Set({ maxErrors: Number.MAX_SAFE_INTEGER });
  try {
    return errors();
  } finally {
    Settings.Set({ maxErrors });
  }
}

interface SchemaNode {
  type?: string;
  const?: unknown;
  properties?: Record<string, SchemaNode>;
  patternProperties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
}

/** The schema at a JSON pointer into `root` (`#/properties/files/items`). */
function schemaAt(root: TSchema, pointer: string): SchemaNode {
  let node: unknown = root;
  for (const key of pointer.split("/").slice(1))
    node = (node as Record<string, unknown>)[key.replaceAll("~1", "/").replaceAll("~0", "~")];
  return node as SchemaNode;
}

/** A JSON pointer into `value` as a path: array indices as numbers. */
function pathOf(value: unknown, pointer: string): Array<string | number> {
  const path: Array<string | number> = [];
  let node = value;
  for (const part of pointer.split("/").slice(1)) {
    const key = part.replaceAll("~1", "/").replaceAll("~0", "~");
    path.push(Array.isArray(node) ? Number(key) : key);
    node = (node as Record<string, unknown> | undefined)?.[key];
  }
  return path;
}

function valueAt(value: unknown, path: Array<string | number>): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown> | undefined)?.[key], value);
}

/** Which branch of a nullable (`X | null`) is X; undefined for any other union. */
function nullableBranch(union: SchemaNode): number | undefined {
  const branches = union.anyOf ?? [];
  const nullAt = branches.findIndex((b) => b.type === "null" && b.const === undefined);
  return branches.length === 2 && nullAt !== -1 ? 1 - nullAt : undefined;
}

const within = (pointer: string, prefix: string) => pointer === prefix || pointer.startsWith(`${prefix}/`);

/**
 * The problems TypeBox's errors amount to. A value not of its type is told so, not also its
 * bounds (1.5 for a whole number of at least 2). A union words its branches' errors: a nullable by
 * those of its other branch, any other as one failure of the whole. A property not allowed is
 * named by its object, once.
 */
function describeErrors(root: TSchema, errors: TLocalizedValidationError[], value: unknown): SchemaProblem[] {
  const unions = errors.filter((e) => e.keyword === "anyOf");
  const place = (e: TLocalizedValidationError) => `${e.instancePath} ${e.schemaPath}`;
  const mistyped = new Set(errors.filter((e) => e.keyword === "type").map(place));
  const kept = errors.filter((error) => {
    if (error.keyword !== "type" && error.keyword !== "const" && mistyped.has(place(error))) return false;
    if (error.keyword === "boolean" && error.schemaPath.endsWith("/additionalProperties")) return false;
    if (error.keyword === "anyOf") return nullableBranch(schemaAt(root, error.schemaPath)) === undefined;
    return unions.every((union) => {
      if (!within(error.schemaPath, `${union.schemaPath}/anyOf`)) return true;
      const branch = nullableBranch(schemaAt(root, union.schemaPath));
      return branch !== undefined && within(error.schemaPath, `${union.schemaPath}/anyOf/${branch}`);
    });
  });
  return kept.flatMap((error) => describe(root, error, value));
}

/** A value as a message shows it: a string in quotes, anything else as it prints. */
const quote = (value: unknown) => (typeof value === "string" ? `"${value}"` : String(value));

function received(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return typeof value;
}

function describe(root: TSchema, error: TLocalizedValidationError, value: unknown): SchemaProblem[] {
  const path = pathOf(value, error.instancePath);
  const problem = (message: string, untyped = false): SchemaProblem[] => [{ path, message, untyped }];
  switch (error.keyword) {
    case "required": {
      const properties = schemaAt(root, error.schemaPath).properties ?? {};
      return error.params.requiredProperties.map((key) => ({
        path: [...path, key],
        message: missingMessage(properties[key] as TSchema),
        untyped: true,
      }));
    }
    case "additionalProperties": {
      const keys = error.params.additionalProperties;
      return problem(`Unrecognized key${keys.length > 1 ? "s" : ""}: ${keys.map(quote).join(", ")}`, true);
    }
    case "type": {
      const schema = schemaAt(root, error.schemaPath);
      // A constant's own error follows and says what was expected.
      if (schema.const !== undefined) return [];
      const found = valueAt(value, path);
      if (error.params.type === "integer" && typeof found === "number" && Number.isFinite(found))
        return problem("Invalid input: expected int, received number", true);
      const expected =
        error.params.type === "integer" ? "number" : schema.patternProperties ? "record" : String(error.params.type);
      return problem(`Invalid input: expected ${expected}, received ${received(found)}`, true);
    }
    case "const":
      return problem(`Invalid input: expected ${quote(error.params.allowedValue)}`, true);
    case "enum": {
      const values = error.params.allowedValues;
      return problem(
        values.length === 1
          ? `Invalid input: expected ${quote(values[0])}`
          : `Invalid option: expected one of ${values.map(quote).join("|")}`,
        true,
      );
    }
    case "anyOf":
      return problem("Invalid input", true);
    case "minimum":
      return problem(`Too small: expected number to be >=${error.params.limit}`);
    case "exclusiveMinimum":
      return problem(`Too small: expected number to be >${error.params.limit}`);
    case "maximum":
      return problem(`Too big: expected number to be <=${error.params.limit}`);
    case "minLength":
      return problem(`Too small: expected string to have >=${error.params.limit} characters`);
    case "minItems":
      return problem(`Too small: expected array to have >=${error.params.limit} items`);
    case "pattern":
      return problem(`Invalid string: must match pattern /${String(error.params.pattern)}/`);
    case "~refine":
      return problem(error.params.message);
    default:
      return problem(error.message);
  }
}

/** What a required property that is absent is told: its schema's failure for `undefined`. */
function missingMessage(schema: TSchema): string {
  const [first] = describeErrors(schema, Value.Errors(schema, undefined), undefined);
  return first?.message ?? "Invalid input";
}

/**
 * A path's place in the schema's order: each property by its index among the schema's properties
 * (a record's by its index among the value's keys, as they were written), each array item by its
 * index.
 */
function rankOf(root: TSchema, value: unknown, path: Array<string | number>): number[] {
  const rank: number[] = [];
  let node: SchemaNode | undefined = root;
  let at = value;
  for (const key of path) {
    const branch: number | undefined = node?.anyOf ? nullableBranch(node) : undefined;
    if (branch !== undefined) node = node!.anyOf![branch];
    if (typeof key === "number") {
      rank.push(key);
      node = node?.items;
    } else if (node?.properties) {
      const keys = Object.keys(node.properties);
      rank.push(keys.includes(key) ? keys.indexOf(key) : keys.length);
      node = node.properties[key];
    } else {
      rank.push(at !== null && typeof at === "object" ? Object.keys(at).indexOf(key) : 0);
      node = node?.patternProperties ? Object.values(node.patternProperties)[0] : undefined;
    }
    at = (at as Record<string | number, unknown> | undefined)?.[key];
  }
  return rank;
}

/** Lexical, except that a place comes after the places inside it. */
function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return b.length - a.length;
}
