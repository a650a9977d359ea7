import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  PiperVoice,
  PiperVoiceError,
  cutSentence,
  phonemeIdMap,
  phonemesToIds,
  phonemizeEspeak,
  piperToInt16,
  readPiperConfig,
} from "../src/piper.ts";
import { snrDb } from "../../audio/test/support/fixtures.ts";

const fixtures = fileURLToPath(new URL("./fixtures/piper/", import.meta.url));
const model = `${fixtures}tiny-en_US.onnx`;

interface Reference {
  texts: {
    voice: string;
    text: string;
    length_scale: number;
    sentences: { ids: number[]; phonemes: string; audio: string; samples: number; int16_sha256: string }[];
  }[];
}
const reference = JSON.parse(await readFile(`${fixtures}tiny-en_US.reference.json`, "utf8")) as Reference;

test("the phonemes and ids of each sentence are upstream piper-phonemize's (the reference harness)", async () => {
  const map = phonemeIdMap(await readPiperConfig(`${model}.json`));
  for (const t of reference.texts) {
    const sentences = phonemizeEspeak(t.text, t.voice);
    assert.deepEqual(
      sentences.map((s) => String.fromCodePoint(...s)),
      t.sentences.map((s) => s.phonemes),
      t.text,
    );
    assert.deepEqual(
      sentences.map((s) => phonemesToIds(s, map)),
      t.sentences.map((s) => s.ids),
      t.text,
    );
  }
});

test("the random-weight voice speaks each sentence as upstream's generator does (noise 0), and scales to int16 as piper does", async () => {
  const voice = await PiperVoice.load(model);
  try {
    assert.equal(voice.sampleRate, 22050);
    assert.equal(voice.espeakVoice, "en-us");
    for (const t of reference.texts) {
      for (const s of t.sentences) {
        const out = await voice.synthesizeIds(s.ids, { noiseScale: 0, noiseW: 0, lengthScale: t.length_scale });
        const ref = new Float32Array((await readFile(`${fixtures}${s.audio}`)).buffer.slice(0));
        assert.equal(out.length, s.samples, `${t.text}: length`);
        const snr = snrDb(ref, out);
        assert.ok(snr > 80, `${t.text}: ${snr.toFixed(1)} dB against upstream`);
        // piper's int16 scaling, on upstream's own float output: the same bytes as upstream's util.
        const int16 = piperToInt16(ref);
        assert.equal(createHash("sha256").update(new Uint8Array(int16.buffer)).digest("hex"), s.int16_sha256);
      }
    }
  } finally {
    await voice.release();
  }
});

test("speak: a sentence at a time, each ended by 0.2 s of silence, at the voice's rate", async () => {
  const voice = await PiperVoice.load(model);
  try {
    const t = reference.texts[0]!;
    const chunks: Int16Array[] = [];
    for await (const chunk of voice.speak(t.text, { noiseScale: 0, noiseW: 0 })) chunks.push(chunk);
    assert.equal(chunks.length, t.sentences.length);
    for (const [i, chunk] of chunks.entries()) {
      const s = t.sentences[i]!;
      assert.equal(chunk.length, s.samples + Math.trunc(0.2 * 22050));
      assert.ok(chunk.subarray(s.samples).every((v) => v === 0));
      const peak = chunk.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      assert.ok(peak >= 32700, `peak ${peak}: the sentence is scaled to full range`);
    }
    // With the voice's own noise (0.667, 0.8) the speech differs run to run, as upstream's does.
    let any = 0;
    for await (const chunk of voice.speak("Hello there.")) any += chunk.length;
    assert.ok(any > Math.trunc(0.2 * 22050));
  } finally {
    await voice.release();
  }
});

test("ids: a phoneme the map lacks is left out and counted, as upstream does", () => {
  const map = new Map<number, number[]>([
    [0x5f, [0]],
    [0x5e, [1]],
    [0x24, [2]],
    [0x61, [14]],
  ]);
  const missing = new Map<number, number>();
  assert.deepEqual(phonemesToIds([0x61, 0x7a, 0x61], map, missing), [1, 0, 14, 0, 14, 0, 2]);
  assert.deepEqual([...missing], [[0x7a, 1]]);
});

test("a config Mixdown cannot run is refused with its reason", async () => {
  await assert.rejects(PiperVoice.load(`${fixtures}absent.onnx`), PiperVoiceError);
  const { writeFile, mkdtemp, rm } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const dir = await mkdtemp(`${tmpdir()}/piper-test-`);
  try {
    const config = JSON.parse(await readFile(`${model}.json`, "utf8")) as Record<string, unknown>;
    await writeFile(`${dir}/text.onnx.json`, JSON.stringify({ ...config, phoneme_type: "text" }));
    await assert.rejects(readPiperConfig(`${dir}/text.onnx.json`), /phoneme_type "text"/);
    await writeFile(`${dir}/bad.onnx.json`, JSON.stringify({ ...config, audio: {} }));
    await assert.rejects(readPiperConfig(`${dir}/bad.onnx.json`), /audio\.sample_rate/);
    assert.throws(() => phonemizeEspeak("hello", "no-such-voice"), PiperVoiceError);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a sentence too long for one run is cut after a clause's punctuation, else after a space, else at the limit", () => {
  const cp = (s: string) => [...s].map((c) => c.codePointAt(0)!);
  const str = (parts: number[][]) => parts.map((p) => String.fromCodePoint(...p));
  assert.deepEqual(str(cutSentence(cp("aaaa, bbbb cccc dd."), 12)), ["aaaa, ", "bbbb cccc ", "dd."]);
  assert.deepEqual(str(cutSentence(cp("aaaaaaaaaaaa"), 5)), ["aaaaa", "aaaaa", "aa"]);
  assert.deepEqual(str(cutSentence(cp("short."), 800)), ["short."]);
  const long = cp("wˈʌn tˈuː θɹˈiː ".repeat(80));
  const parts = cutSentence(long, 800);
  assert.ok(parts.every((p) => p.length <= 800));
  assert.deepEqual(parts.flat(), long, "nothing lost or repeated");
});
