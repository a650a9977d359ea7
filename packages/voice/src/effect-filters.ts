import { POST_EFFECTS, PRE_EFFECTS, type EffectChain } from "./effects-schema.ts";

const linear = (db: number): number => 10 ** (db / 20);
const fmt = (v: number): string => String(Number(v.toPrecision(6)));

type Builder = (p: Record<string, number>, sampleRate: number, label: string) => string | null;

const dynamics =
  (kind: "agate" | "acompressor"): Builder =>
  (p) =>
    kind === "agate"
      ? `agate=threshold=${fmt(Math.max(linear(p.threshold_db!), 1e-5))}:ratio=${fmt(p.ratio!)}:attack=${fmt(p.attack_ms!)}:release=${fmt(p.release_ms!)}:range=0.001`
      : `acompressor=threshold=${fmt(Math.max(linear(p.threshold_db!), 0.000977))}:ratio=${fmt(p.ratio!)}:attack=${fmt(p.attack_ms!)}:release=${fmt(p.release_ms!)}`;

const cutoff =
  (kind: "highpass" | "lowpass"): Builder =>
  (p, sampleRate) =>
    `${kind}=f=${fmt(Math.min(p.cutoff_frequency_hz!, sampleRate / 2 - 1))}:poles=2`;

/**
 * ffmpeg filter per effect. Reverb is a Freeverb-like approximation: a bank of decaying echoes
 * (aecho) sized by room_size, low-passed by damping, widened by delaying one side of the wet
 * signal, then mixed with the dry signal at wet_level/dry_level; freeze_mode holds the tail.
 */
const BUILDERS: Record<"pre" | "post", Record<string, Builder>> = {
  pre: {
    noiseGate: dynamics("agate"),
    compressor: dynamics("acompressor"),
    highPassFilter: cutoff("highpass"),
    lowPassFilter: cutoff("lowpass"),
  },
  post: {
    compressor: dynamics("acompressor"),
    chorus: (p) => {
      if (p.mix === 0) return null;
      const depthMs = Math.max(0.01, p.depth! * p.centre_delay_ms!);
      const voices = [{ delay: p.centre_delay_ms!, decay: p.mix!, speed: p.rate_hz! }];
      // A second, slower voice stands in for the feedback path ffmpeg's chorus lacks.
      if (Math.abs(p.feedback!) > 0.01)
        voices.push({ delay: p.centre_delay_ms! * 1.5, decay: p.mix! * Math.abs(p.feedback!), speed: p.rate_hz! * 0.7 });
      return `chorus=in_gain=${fmt(1 - p.mix! / 2)}:out_gain=1:delays=${voices.map((v) => fmt(v.delay)).join("|")}:decays=${voices
        .map((v) => fmt(Math.max(0.01, v.decay)))
        .join(
          "|",
        )}:speeds=${voices.map((v) => fmt(Math.max(0.01, v.speed))).join("|")}:depths=${voices.map(() => fmt(depthMs)).join("|")}`;
    },
    delay: (p) => {
      if (p.mix === 0 || p.delay_seconds! * 1000 < 1) return null;
      const taps: Array<[number, number]> = [];
      for (let i = 1; i <= 8; i++) {
        const decay = p.mix! * p.feedback! ** (i - 1);
        if (i > 1 && decay < 0.01) break;
        taps.push([p.delay_seconds! * 1000 * i, decay]);
        if (p.feedback === 0) break;
      }
      return `aecho=in_gain=${fmt(1 - p.mix! / 2)}:out_gain=1:delays=${taps.map((t) => fmt(Math.min(90000, t[0]))).join("|")}:decays=${taps
        .map((t) => fmt(Math.max(0.001, Math.min(1, t[1]))))
        .join("|")}`;
    },
    reverb: (p, sampleRate, label) => {
      const size = 0.2 + 0.8 * p.room_size!;
      const base = [29.7, 37.1, 41.1, 43.7, 53.3, 61.9, 71.3, 79.7].map((ms) => ms * (0.5 + size));
      const feedback = p.freeze_mode! >= 0.5 ? 0.98 : 0.5 + 0.45 * size;
      const decays = base.map((_, i) => Math.max(0.001, feedback ** (i + 1)));
      const damp = Math.min(sampleRate / 2 - 1, 16000 - 14000 * p.damping!);
      const widthMs = 12 * p.width!;
      const wet = [
        `aecho=in_gain=1:out_gain=${fmt(0.35)}:delays=${base.map(fmt).join("|")}:decays=${decays.map(fmt).join("|")}`,
        `lowpass=f=${fmt(damp)}`,
        ...(widthMs >= 0.1 ? [`adelay=delays=0|${fmt(widthMs)}`] : []),
      ].join(",");
      return `asplit=2[${label}d][${label}w];[${label}w]${wet}[${label}x];[${label}d][${label}x]amix=inputs=2:normalize=0:weights=${fmt(p.dry_level!)} ${fmt(
        p.wet_level!,
      )}`;
    },
  },
};

/**
 * The effect chain as one ffmpeg filtergraph fragment (one input, one output), or null when it
 * changes nothing. Effects run in the chain's key order.
 */
export function effectChainFilter(field: "pre" | "post", chain: EffectChain, sampleRate: number): string | null {
  const catalogue = field === "pre" ? PRE_EFFECTS : POST_EFFECTS;
  const parts: string[] = [];
  let n = 0;
  for (const [effect, params] of Object.entries(chain)) {
    const builder = BUILDERS[field][effect];
    if (!builder || !Object.hasOwn(catalogue, effect)) throw new Error(`${field}.${effect} has no ffmpeg implementation`);
    // Stored chains are complete; a hand-made one gets the catalogue's defaults for what it omits.
    const complete = { ...Object.fromEntries(Object.entries(catalogue[effect]!).map(([k, v]) => [k, v.default])), ...params };
    const filter = builder(complete, sampleRate, `${field}${n++}`);
    if (filter) parts.push(filter);
  }
  return parts.length > 0 ? parts.join(",") : null;
}
