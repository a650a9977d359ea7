import { Type, type Static, type TObject, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import type { TValidationError } from "typebox/error";

export class ManifestError extends Error {
  override readonly name = "ManifestError";
  readonly source: string;

  constructor(source: string, message: string) {
    super(`${source}: ${message}`);
    this.source = source;
  }
}

/**
 * onnxruntime's graph optimisation levels, as a manifest names them. `all` (onnxruntime's own
 * default, and what python-audio-separator runs) adds the layout transformations: convolutions in
 * blocked (NCHWc) layout, with reorder nodes around them. Those are faster for wide convolutions
 * but hold more memory during a run; `extended` stops before them.
 */
export const GRAPH_OPTIMIZATION_LEVELS = ["disabled", "basic", "extended", "all"] as const;
export type GraphOptimizationLevel = (typeof GRAPH_OPTIMIZATION_LEVELS)[number];

/** Name of the stem derived as mixture − vocals for multi-stem models. */
export const BACKING_STEM = "backing";

/**
 * How a field words its failures when its rule involves fields before it (`hopLength` in
 * 1..nFft): from the manifest as far as it is read. When a field's failure is the first, the
 * fields before it passed the schema, so the wording may read them as their schema says.
 */
export type FieldWording<Manifest> = (manifest: Manifest, name: string, value: unknown) => string;

/** What describeField reads of a schema: the keywords the manifests use, and a wording. */
interface FieldSchema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  pattern?: string;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  multipleOf?: number;
  minItems?: number;
  default?: unknown;
  properties?: Record<string, TSchema>;
  items?: TSchema;
  wording?: FieldWording<never>;
}

const integerIn = (name: string, min: number, max: number) => `${name} must be an integer in ${min}..${max}`;

export const NonEmptyString = Type.String({ minLength: 1 });

/**
 * An integer in minimum..maximum (at most the largest safe integer). `range`, for a field whose
 * bounds are other fields' (`hopLength` in 1..nFft), is the range its failures name; the family's
 * rules check it.
 */
export function IntegerField<Manifest>({
  minimum,
  maximum = Number.MAX_SAFE_INTEGER,
  multipleOf,
  range,
}: {
  minimum: number;
  maximum?: number;
  multipleOf?: number;
  range?: (manifest: Manifest) => [number, number];
}) {
  const wording: FieldWording<Manifest> | undefined = range && ((manifest, name) => integerIn(name, ...range(manifest)));
  return Type.Integer({ minimum, maximum, ...(multipleOf ? { multipleOf } : {}), ...(wording ? { wording } : {}) });
}

/** Stem names become file names (`vocals.wav`), so they are kept to a safe alphabet. */
const STEM_NAME = { pattern: "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description: "a stem name (letters, digits, _ or -)" };
export const StemName = Type.String(STEM_NAME);

/** A list of stem names: at least one, none twice. */
export const StemNames = Type.Array(StemName, { minItems: 1, uniqueItems: true });

/**
 * A single-stem model's name for mixture − its stem: required of single-stem models and refused
 * for the others (the family's rules say which, by `stems`, which comes before it).
 */
export const SecondaryStem = Type.Optional(
  Type.String({
    ...STEM_NAME,
    wording: ((manifest, name, value) =>
      manifest.stems.length === 1
        ? `${name} (required for single-stem models) must be ${STEM_NAME.description}, got ${JSON.stringify(value)}`
        : `${name} is only for single-stem models`) satisfies FieldWording<{ stems: string[] }>,
  }),
);

/** What every family's manifest has, whatever else its architecture needs; each family's schema starts with it. */
export const ManifestBaseSchema = Type.Object({
  name: NonEmptyString,
  /** the family that reads the rest of the manifest and runs the model */
  architecture: NonEmptyString,
  /** model file, relative to the manifest's directory */
  file: NonEmptyString,
  /** the model's rate; inputs are resampled to it and outputs back */
  sampleRate: IntegerField({ minimum: 1000, maximum: 384000 }),
});
export type ManifestBase = Static<typeof ManifestBaseSchema>;

type Step = string | number;

/** A field's name as the messages quote it: `"stems[0]"`, `"members[1].file"`. */
const quoted = (steps: readonly Step[]) =>
  `"${steps.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("")}"`;

const childOf = (schema: FieldSchema, step: Step): FieldSchema =>
  (typeof step === "number" ? schema.items : schema.properties?.[step]) as FieldSchema;

const valueAt = (value: unknown, step: Step): unknown =>
  typeof value === "object" && value !== null ? (value as Record<Step, unknown>)[step] : undefined;

/**
 * The house's wording of what the field at `steps` must be, given the schema keyword it failed
 * (none for a value a family's rule refused): the field's own wording where it, or a field around
 * it, has one (its rule involves other fields), else its schema's, the keyword's where it matters.
 */
function describeField(root: TObject, manifest: unknown, steps: readonly Step[], keyword?: string): string {
  let schema = root as FieldSchema;
  let value = manifest;
  for (let i = 0; i <= steps.length; i++) {
    if (schema.wording) return schema.wording(manifest as never, quoted(steps.slice(0, i)), value);
    if (i < steps.length) [schema, value] = [childOf(schema, steps[i]), valueAt(value, steps[i])];
  }
  if (steps.length === 0) return "manifest must be a JSON object";
  const name = quoted(steps);
  const got = JSON.stringify(value);
  if (keyword === "multipleOf")
    return schema.multipleOf === 2 ? `${name} must be even` : `${name} must be a multiple of ${schema.multipleOf}`;
  if (keyword === "uniqueItems") return `${name} has duplicates`;
  if (schema.const !== undefined && typeof value === "string" && value !== "")
    return `unsupported ${steps.at(-1)} ${got} (only ${JSON.stringify(schema.const)})`;
  if (schema.enum) return `${name} must be one of ${schema.enum.join(", ")}, got ${got}`;
  if (schema.pattern) return `${name} must be ${schema.description}, got ${got}`;
  switch (schema.type) {
    case "integer":
      return integerIn(name, schema.minimum!, schema.maximum!);
    case "number":
      return `${name} must be a ${schema.exclusiveMinimum === 0 ? "positive " : ""}number`;
    case "boolean":
      return `${name} must be true or false`;
    case "array":
      return `${name} must be a ${schema.minItems ? "non-empty " : ""}array`;
    case "object":
      return `${name} must be an object`;
    default: // Every string a manifest holds must be non-empty.
      return `${name} must be a non-empty string`;
  }
}

/** A schema error's field: where it is (a missing property's own place included), and the keyword. */
interface FailedField {
  steps: Step[];
  /** each step's place in its parent: a property's in its schema's order, an item's index */
  places: number[];
  keyword: string;
}

function failedField(root: TObject, { keyword, instancePath, params }: TValidationError): FailedField {
  const parts = instancePath
    .split("/")
    .slice(1)
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
  if (keyword === "required") parts.push((params as { requiredProperties: string[] }).requiredProperties[0]);
  const field: FailedField = { steps: [], places: [], keyword };
  let schema = root as FieldSchema;
  for (const part of parts) {
    const step = schema.type === "array" ? Number(part) : part;
    field.steps.push(step);
    field.places.push(typeof step === "number" ? step : Object.keys(schema.properties ?? {}).indexOf(step));
    schema = childOf(schema, step);
  }
  return field;
}

/**
 * Whether `a` is a field before `b`. A field and one inside it are not ordered, so the one TypeBox
 * reports first stays first: a list's items before the list's own `uniqueItems`.
 */
function before(a: FailedField, b: FailedField): boolean {
  for (let i = 0; i < Math.min(a.places.length, b.places.length); i++)
    if (a.places[i] !== b.places[i]) return a.places[i] < b.places[i];
  return false;
}

/**
 * What copies a value to hold only what `schema` declares, with each absent (or null) field that
 * has a default given it: what the family's code reads, however much else a manifest carries.
 * Anything that is not the declared shape is left as it is, for the check to refuse. Built once
 * per schema, as the validator is.
 */
function declaredPartOf(schema: FieldSchema): (value: unknown) => unknown {
  if (schema.properties) {
    const fields = Object.entries(schema.properties).map(
      ([key, field]) => [key, (field as FieldSchema).default, declaredPartOf(field as FieldSchema)] as const,
    );
    return (value) => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
      const copy: Record<string, unknown> = {};
      for (const [key, fallback, part] of fields) {
        let v = (value as Record<string, unknown>)[key];
        if ((v === undefined || v === null) && fallback !== undefined) v = fallback;
        if (v !== undefined) copy[key] = part(v);
      }
      return copy;
    };
  }
  if (schema.items) {
    const part = declaredPartOf(schema.items as FieldSchema);
    // Array.from, not map: a hole (never in JSON, but in an array built in code) becomes undefined, for the check to refuse.
    return (value) => (Array.isArray(value) ? Array.from(value, (item) => part(item)) : value);
  }
  return (value) => value;
}

/** How a family's rules report the first one a manifest breaks. */
export interface RuleFailures {
  /** in the rule's own words */
  fail(message: string): never;
  /** in the field's own words (its schema's): a value the rules refuse, as `failAt("members", 0, "segmentSamples")` */
  failAt(...steps: Step[]): never;
}

/**
 * What a family's manifest must hold beyond its schema (relations between fields), each rule
 * under the field after which it is checked: it reads that field and the ones before it only.
 */
export type ManifestRules<Manifest> = {
  // `& string` keeps it one object type for a union of manifests (MSST's), rather than a union of them.
  [K in keyof Manifest & string]?: (manifest: Manifest, failures: RuleFailures) => void;
};

/**
 * A family's manifest reader: `schema` checks the manifest's shape and `rules` the rest; every
 * failure is a ManifestError naming `source`. A manifest is judged field by field in the schema's
 * order, each field's rules right after it, and the first fault found is the one reported, in the
 * house's wording (describeField). What it reads holds the schema's fields only, defaults filled
 * in, whatever else the file carries.
 */
export function manifestReader<S extends TObject>(
  schema: S,
  rules: ManifestRules<Static<S>> = {},
): (json: unknown, source: string) => Static<S> {
  let compiled: ReturnType<typeof Compile<S>> | undefined;
  const declaredPart = declaredPartOf(schema as FieldSchema);
  const fields = Object.keys(schema.properties);
  return (json, source) => {
    // Compiled on first use: a process that reads no manifest of this family does not pay for it.
    const validator = (compiled ??= Compile(schema));
    const manifest = declaredPart(json) as Static<S>;
    const fail = (message: string): never => {
      throw new ManifestError(source, message);
    };
    const failures: RuleFailures = { fail, failAt: (...steps) => fail(describeField(schema, manifest, steps)) };
    // TypeBox gathers up to 8 errors in the schema's order (an object's missing properties before
    // its properties' errors), so the first field's error is among them.
    let first: FailedField | undefined;
    if (!validator.Check(manifest))
      for (const error of validator.Errors(manifest)) {
        const field = failedField(schema, error);
        if (!first || before(field, first)) first = field;
      }
    // The fields before the first that fails the schema passed it, so their rules can read them.
    const checked = first ? (first.places[0] ?? 0) : fields.length;
    for (let i = 0; i < checked; i++) rules[fields[i] as keyof Static<S>]?.(manifest, failures);
    if (first) fail(describeField(schema, manifest, first.steps, first.keyword));
    return manifest;
  };
}
