// Mixdown's Piper phonemes and ids (src/piper.ts) against upstream piper-phonemize's own (the
// harness, build.sh) on upstream's test sentences:
//   node --import tsx compare-phonemes.ts HARNESS ESPEAK_DATA PIPER_CHECKOUT
// PIPER_CHECKOUT: github.com/rhasspy/piper; its etc/test_sentences/test_<voice>.jsonl give the texts
// and the espeak-ng voice of each. Prints, per voice, how many lines have the same phonemes and the
// same ids (upstream's default phoneme id map) sentence by sentence, and the first difference.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { phonemesToIds, phonemizeEspeak } from "../../src/piper.ts";

const [harness, espeakData, piper] = process.argv.slice(2);
if (!harness || !espeakData || !piper) throw new Error("usage: compare-phonemes.ts HARNESS ESPEAK_DATA PIPER_CHECKOUT");
const corpus = join(piper, "etc", "test_sentences");
const lines: { voice: string; text: string }[] = [];
for (const file of readdirSync(corpus)
  .filter((f) => /^test_.+\.jsonl$/.test(f))
  .sort()) {
  const voice = file.slice("test_".length, -".jsonl".length);
  for (const line of readFileSync(join(corpus, file), "utf8").split("\n").filter(Boolean))
    lines.push({ voice, text: (JSON.parse(line) as { text: string }).text });
}
const idMap = new Map<number, number[]>(
  Object.entries(JSON.parse(execFileSync(harness, ["--default-id-map"]).toString()) as Record<string, number[]>).map(([k, v]) => [
    k.codePointAt(0)!,
    v,
  ]),
);
const input = lines.map((l) => JSON.stringify(l)).join("\n") + "\n";
const upstream = execFileSync(harness, ["--espeak-data", espeakData], { input, maxBuffer: 1 << 28 })
  .toString()
  .trim()
  .split("\n")
  .map((l) => JSON.parse(l) as { phonemes?: number[][]; ids?: number[][]; error?: string });

const per = new Map<string, { lines: number; phonemes: number; ids: number; both: number; first?: string }>();
for (const [i, { voice, text }] of lines.entries()) {
  const ref = upstream[i]!;
  const row = per.get(voice) ?? { lines: 0, phonemes: 0, ids: 0, both: 0 };
  per.set(voice, row);
  row.lines++;
  let ours: number[][] | string;
  try {
    ours = phonemizeEspeak(text, voice);
  } catch (err) {
    ours = (err as Error).message;
  }
  if (ref.error !== undefined || typeof ours === "string") {
    // Both refusing the voice counts as agreement.
    if (ref.error !== undefined && typeof ours === "string") row.both++;
    else row.first ??= `upstream: ${ref.error ?? "phonemes"}; Mixdown: ${typeof ours === "string" ? ours : "phonemes"}`;
    continue;
  }
  const samePhonemes = JSON.stringify(ours) === JSON.stringify(ref.phonemes);
  const sameIds = JSON.stringify(ours.map((s) => phonemesToIds(s, idMap))) === JSON.stringify(ref.ids);
  if (samePhonemes) row.phonemes++;
  if (sameIds) row.ids++;
  if (samePhonemes && sameIds) row.both++;
  else
    row.first ??= `${text.slice(0, 60)}…: upstream ${JSON.stringify(ref.phonemes!.map((s) => String.fromCodePoint(...s)))} Mixdown ${JSON.stringify(ours.map((s) => String.fromCodePoint(...s)))}`;
}
let total = 0;
let same = 0;
console.log("| voice | lines | same phonemes | same ids | first difference |\n| --- | --- | --- | --- | --- |");
for (const [voice, r] of per) {
  total += r.lines;
  same += r.both;
  console.log(`| ${voice} | ${r.lines} | ${r.phonemes} | ${r.ids} | ${r.first ?? "-"} |`);
}
console.log(`\n${same} of ${total} lines identical (phonemes and ids) in ${per.size} voices`);
