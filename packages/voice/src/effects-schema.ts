// The pre/post effect catalogue shared by the API (validation) and the worker (ffmpeg filters).
// Imports nothing: the API loads it without the inference runtime.

/** A numeric effect parameter: its range and default. */
export interface EffectParam {
  min: number;
  max: number;
  default: number;
}

export type EffectSpec = Record<string, EffectParam>;

/** Parameter names are the ones users know from pedalboard-style chains (as the hosted API takes them). */
const compressor: EffectSpec = {
  threshold_db: { min: -60, max: 0, default: -20 },
  ratio: { min: 1, max: 20, default: 4 },
  attack_ms: { min: 0.01, max: 1000, default: 1 },
  release_ms: { min: 0.01, max: 5000, default: 100 },
};
const filter = (cutoff: number): EffectSpec => ({ cutoff_frequency_hz: { min: 1, max: 20000, default: cutoff } });

export const PRE_EFFECTS: Record<string, EffectSpec> = {
  noiseGate: {
    threshold_db: { min: -100, max: 0, default: -50 },
    ratio: { min: 1, max: 100, default: 10 },
    attack_ms: { min: 0.01, max: 1000, default: 1 },
    release_ms: { min: 0.01, max: 5000, default: 100 },
  },
  compressor,
  highPassFilter: filter(80),
  lowPassFilter: filter(16000),
};

export const POST_EFFECTS: Record<string, EffectSpec> = {
  chorus: {
    rate_hz: { min: 0.01, max: 20, default: 1 },
    depth: { min: 0, max: 1, default: 0.25 },
    centre_delay_ms: { min: 1, max: 100, default: 7 },
    feedback: { min: -0.95, max: 0.95, default: 0 },
    mix: { min: 0, max: 1, default: 0.5 },
  },
  reverb: {
    room_size: { min: 0, max: 1, default: 0.5 },
    damping: { min: 0, max: 1, default: 0.5 },
    wet_level: { min: 0, max: 1, default: 0.33 },
    dry_level: { min: 0, max: 1, default: 0.4 },
    width: { min: 0, max: 1, default: 1 },
    freeze_mode: { min: 0, max: 1, default: 0 },
  },
  compressor,
  delay: {
    delay_seconds: { min: 0, max: 10, default: 0.5 },
    feedback: { min: 0, max: 0.95, default: 0 },
    mix: { min: 0, max: 1, default: 0.5 },
  },
};

/**
 * The hosted service's documentation names effects as the effects themselves are named
 * (`NoiseGate`, `HighPassFilter`, `Reverb`, ...); Mixdown's names are the same in camelCase
 * (`noiseGate`, `highPassFilter`, `reverb`). Both are accepted; chains are stored under the
 * camelCase name.
 */
export function documentedEffectName(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function canonicalEffect(catalogue: Record<string, EffectSpec>, given: string): string | undefined {
  if (Object.hasOwn(catalogue, given)) return given;
  return Object.keys(catalogue).find((name) => documentedEffectName(name) === given);
}

/** effect -> complete parameters; key order is the order effects are applied in. */
export type EffectChain = Record<string, Record<string, number>>;

export class EffectChainError extends Error {
  override readonly name = "EffectChainError";
}

/**
 * Parses and validates `pre` or `post`: a JSON object (a string in the form part) keyed by
 * effect, each value an object of numeric parameters, e.g.
 * `{"noiseGate": {"threshold_db": -40}, "highPassFilter": {"cutoff_frequency_hz": 100}}`.
 * `true` or `{}` enable an effect with its defaults; `false`/`null` leave it out. Omitted
 * parameters get their defaults, so the stored chain is complete. Unknown effects or parameters
 * and out-of-range values throw an EffectChainError naming them.
 */
export function parseEffectChain(field: "pre" | "post", raw: string | undefined): EffectChain {
  if (raw === undefined || raw.trim() === "") return {};
  const catalogue = field === "pre" ? PRE_EFFECTS : POST_EFFECTS;
  const known = Object.keys(catalogue).join(", ");
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new EffectChainError(
      `${field} must be a JSON object (e.g. {"${Object.keys(catalogue)[0]}": {}}); it is not valid JSON`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new EffectChainError(`${field} must be a JSON object whose keys are effects (${known})`);
  }
  const chain: EffectChain = {};
  const givenAs = new Map<string, string>();
  for (const [asGiven, params] of Object.entries(value)) {
    const effect = canonicalEffect(catalogue, asGiven);
    if (!effect) {
      const documented = Object.keys(catalogue).map(documentedEffectName).join(", ");
      throw new EffectChainError(`${field}.${asGiven} is not a known ${field} effect (known: ${known}; or ${documented})`);
    }
    const earlier = givenAs.get(effect);
    if (earlier !== undefined) throw new EffectChainError(`${field}.${asGiven}: the effect is already given as ${earlier}`);
    givenAs.set(effect, asGiven);
    const spec = catalogue[effect]!;
    if (params === false || params === null) continue;
    if (params !== true && (typeof params !== "object" || Array.isArray(params))) {
      throw new EffectChainError(`${field}.${effect} must be an object of parameters (${Object.keys(spec).join(", ")})`);
    }
    const given = params === true ? {} : (params as Record<string, unknown>);
    for (const name of Object.keys(given)) {
      if (!Object.hasOwn(spec, name)) {
        throw new EffectChainError(
          `${field}.${effect}.${name} is not a parameter of ${effect} (known: ${Object.keys(spec).join(", ")})`,
        );
      }
    }
    const out: Record<string, number> = {};
    for (const [name, range] of Object.entries(spec)) {
      let v = given[name];
      if (v === undefined) v = range.default;
      if (typeof v === "boolean" && name === "freeze_mode") v = v ? 1 : 0;
      if (typeof v !== "number" || !Number.isFinite(v)) throw new EffectChainError(`${field}.${effect}.${name} must be a number`);
      if (v < range.min || v > range.max) {
        throw new EffectChainError(`${field}.${effect}.${name} must be between ${range.min} and ${range.max} (got ${v})`);
      }
      out[name] = v;
    }
    chain[effect] = out;
  }
  return chain;
}
