import assert from "node:assert/strict";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  checkLanguage,
  festivalCanSpeak,
  LanguageUnavailableError,
  listPiperVoices,
  piperVoiceFor,
  NothingToSpeakError,
  resolveSynthesizer,
  splitSentences,
  SynthesizerMissingError,
  synthesizeSpeech,
  synthesizerFor,
  synthesizerLanguages,
  type SynthesizerName,
} from "../src/speech.ts";
import { run, tempDir } from "./support.ts";

async function probe(path: string): Promise<{ sampleRate: number; channels: number; seconds: number }> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-show_entries",
    "stream=sample_rate,channels,duration",
    "-of",
    "json",
    path,
  ]);
  const s = JSON.parse(stdout).streams[0];
  return { sampleRate: Number(s.sample_rate), channels: s.channels, seconds: Number(s.duration) };
}

describe("splitSentences", () => {
  test("cuts at sentence ends and line breaks, packs short sentences up to the limit, keeps every word in order", () => {
    const text = "Hello there. How are you?\nI am fine!  Thanks…  And you.\r\n\r\nLast line";
    assert.deepEqual(splitSentences(text, 1000), ["Hello there. How are you? I am fine! Thanks… And you. Last line"]);
    assert.deepEqual(splitSentences(text, 26), ["Hello there. How are you?", "I am fine! Thanks…", "And you. Last line"]);
    const words = (s: string) => s.split(/\s+/).filter(Boolean);
    assert.deepEqual(words(splitSentences(text, 26).join(" ")), words(text));
  });

  test("a sentence longer than the limit is cut at a comma, else a space, never past the limit", () => {
    const long = "One two three, four five six seven eight nine ten eleven twelve thirteen fourteen fifteen.";
    const pieces = splitSentences(long, 30);
    assert.ok(
      pieces.every((p) => p.length <= 30),
      JSON.stringify(pieces),
    );
    assert.equal(pieces[0], "One two three,");
    assert.equal(pieces.join(" "), long);
    const unbroken = "x".repeat(75);
    assert.deepEqual(splitSentences(unbroken, 30), ["x".repeat(30), "x".repeat(30), "x".repeat(15)]);
  });

  test("whitespace only is no piece at all", () => {
    assert.deepEqual(splitSentences(" \n\t \r\n "), []);
  });
});

describe("synthesizeSpeech", () => {
  const text = "The first sentence is here. A second one follows it! Does the third ask a question?";
  for (const synthesizer of ["festival", "espeak-ng"] as SynthesizerName[]) {
    test(`${synthesizer}: pieces spoken one by one join into one mono file at the asked rate, as long as the pieces spoken alone`, async () => {
      const dir = await tempDir();
      const whole = join(dir, "whole.wav");
      const result = await synthesizeSpeech(text, whole, { synthesizer, workDir: dir, sampleRate: 44100, maxPieceChars: 30 });
      assert.equal(result.synthesizer, synthesizer);
      assert.equal(result.pieces, 3);
      const info = await probe(whole);
      assert.equal(info.sampleRate, 44100);
      assert.equal(info.channels, 1);
      assert.ok(Math.abs(info.seconds - result.seconds) < 0.01, `${info.seconds} vs ${result.seconds}`);
      let alone = 0;
      for (const [i, piece] of splitSentences(text, 30).entries()) {
        const out = join(dir, `piece-${i}.wav`);
        alone += (await synthesizeSpeech(piece, out, { synthesizer, workDir: dir, sampleRate: 44100 })).seconds;
      }
      assert.ok(Math.abs(alone - result.seconds) < 0.01, `pieces alone ${alone} s, joined ${result.seconds} s`);
      assert.ok(result.seconds > 3, `${result.seconds} s of speech for three sentences`);
    });
  }

  test("a text in a script Festival's English voice cannot read is nothing to speak for it, and speech for espeak-ng", async () => {
    const dir = await tempDir();
    const russian = "Привет, мир. Как дела?";
    assert.equal(festivalCanSpeak(russian), false);
    assert.equal(festivalCanSpeak("Café déjà vu"), true);
    await assert.rejects(
      synthesizeSpeech(russian, join(dir, "festival.wav"), { synthesizer: "festival", workDir: dir, sampleRate: 16000 }),
      NothingToSpeakError,
    );
    const spoken = await synthesizeSpeech(russian, join(dir, "espeak.wav"), {
      synthesizer: "espeak-ng",
      workDir: dir,
      sampleRate: 16000,
    });
    assert.ok(spoken.seconds > 1, `${spoken.seconds} s`);
    // Mixed text: the pieces Festival can read are spoken, the others are left out rather than failing the job.
    const mixed = await synthesizeSpeech("Hello there. Привет!", join(dir, "mixed.wav"), {
      synthesizer: "festival",
      workDir: dir,
      sampleRate: 16000,
      maxPieceChars: 14,
    });
    assert.equal(mixed.pieces, 2);
    assert.ok(mixed.seconds > 0.5);
  });

  test("an abort stops the synthesizer and rejects with the signal's reason", async () => {
    const dir = await tempDir();
    const controller = new AbortController();
    const long = "This sentence is spoken again and again. ".repeat(40);
    setTimeout(() => controller.abort(new Error("stop")), 300);
    await assert.rejects(
      synthesizeSpeech(long, join(dir, "out.wav"), {
        synthesizer: "festival",
        workDir: dir,
        sampleRate: 16000,
        maxPieceChars: 100,
        signal: controller.signal,
      }),
      /stop|abort/i,
    );
  });
});

describe("resolveSynthesizer", () => {
  test("auto prefers Festival's HTS voice; without text2wave it takes espeak-ng; with neither it names what to install", async () => {
    assert.equal(await resolveSynthesizer("auto"), "festival");
    assert.equal(await resolveSynthesizer("espeak-ng"), "espeak-ng");
    const onlyEspeak = await tempDir();
    await symlink((await run("sh", ["-c", "command -v espeak-ng"])).stdout.trim(), join(onlyEspeak, "espeak-ng"));
    assert.equal(await resolveSynthesizer("auto", onlyEspeak), "espeak-ng");
    await assert.rejects(
      resolveSynthesizer("festival", onlyEspeak),
      (err: Error) =>
        err instanceof SynthesizerMissingError &&
        /TTS_SYNTHESIZER=festival\): Festival's text2wave is not on PATH \(apt-get install festival festvox-us-slt-hts\)/.test(
          err.message,
        ),
    );
    const empty = await tempDir();
    await assert.rejects(
      resolveSynthesizer("auto", empty),
      (err: Error) =>
        err instanceof SynthesizerMissingError &&
        /no text-to-speech synthesizer is installed on this worker/.test(err.message) &&
        /apt-get install festival festvox-us-slt-hts/.test(err.message) &&
        /espeak-ng is not on PATH \(apt-get install espeak-ng\)/.test(err.message),
    );
  });
});

describe("languages", () => {
  test("the languages are espeak-ng's (by language and by voice file) and Festival's English; a missing one is named with the list; none without synthesizers", async () => {
    const languages = await synthesizerLanguages();
    for (const l of ["en", "en-us", "en-gb", "de", "fr", "fr-fr", "pt-br", "cmn", "ru"]) assert.ok(languages.includes(l), l);
    assert.deepEqual(languages, [...languages].sort());
    assert.equal(checkLanguage(" DE ", languages), "de");
    assert.throws(
      () => checkLanguage("tlh", languages),
      (err: Error) =>
        err instanceof LanguageUnavailableError && /"tlh" is not one this server speaks; available: af, am, /.test(err.message),
    );
    const onlyEspeak = await tempDir();
    await symlink((await run("sh", ["-c", "command -v espeak-ng"])).stdout.trim(), join(onlyEspeak, "espeak-ng"));
    assert.ok((await synthesizerLanguages(onlyEspeak)).includes("de"));
    assert.deepEqual(await synthesizerLanguages(await tempDir()), []);
    assert.throws(() => checkLanguage("de", []), /no synthesizer is installed/);
  });

  test("English goes to Festival's voice, every other language to espeak-ng (refused when only Festival is allowed)", async () => {
    assert.equal(await synthesizerFor("auto", null), "festival");
    assert.equal(await synthesizerFor("auto", "en-us"), "festival");
    assert.equal(await synthesizerFor("auto", "de"), "espeak-ng");
    assert.equal(await synthesizerFor("auto", "en-gb"), "espeak-ng");
    await assert.rejects(
      synthesizerFor("festival", "de"),
      (err: Error) => err instanceof SynthesizerMissingError && /needs espeak-ng/.test(err.message),
    );
  });

  test("espeak-ng speaks the text in the language asked for: German and English readings of one text differ", async () => {
    const dir = await tempDir();
    const text = "Der Zug nach Wien fährt um sieben Uhr.";
    const spoken = async (language: string) => {
      const out = join(dir, `${language}.wav`);
      const result = await synthesizeSpeech(text, out, { synthesizer: "espeak-ng", language, workDir: dir, sampleRate: 16000 });
      return {
        result,
        pcm: (await run("ffmpeg", ["-v", "error", "-i", out, "-f", "s16le", "-"], { encoding: "buffer" })).stdout,
      };
    };
    const [de, en] = [await spoken("de"), await spoken("en-us")];
    assert.ok(de.result.seconds > 1 && en.result.seconds > 1);
    assert.notDeepEqual(de.pcm, en.pcm);
    // espeak-ng's German voice is the same voice as `-v de` on the command line.
    const direct = join(dir, "direct.wav");
    await run("espeak-ng", ["-v", "de", "-w", direct, text]);
    assert.ok(Math.abs((await probe(direct)).seconds - de.result.seconds) < 0.05);
  });
});

describe("Piper voices", () => {
  const fixture = join(import.meta.dirname, "fixtures", "piper", "tiny-en_US.onnx");

  test("listPiperVoices finds each .onnx with a config it can run, names the rest, and piperVoiceFor picks by language", async () => {
    const { copyFile } = await import("node:fs/promises");
    const dir = await tempDir();
    assert.deepEqual(await listPiperVoices(join(dir, "absent")), { voices: [], problems: [] });
    await copyFile(fixture, join(dir, "b-voice.onnx"));
    await copyFile(`${fixture}.json`, join(dir, "b-voice.onnx.json"));
    await copyFile(fixture, join(dir, "no-config.onnx"));
    const { voices, problems } = await listPiperVoices(dir);
    assert.deepEqual(
      voices.map((v) => [v.name, v.language, v.sampleRate]),
      [["b-voice", "en-us", 22050]],
    );
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /no-config\.onnx\.json/);

    const de = { ...voices[0]!, name: "a-de", modelPath: "", language: "de" };
    const gb = { ...voices[0]!, name: "a-gb", modelPath: "", language: "en-gb" };
    assert.equal(piperVoiceFor([de, ...voices], null)?.name, "b-voice", "English (en-us first) by default");
    assert.equal(piperVoiceFor([de, gb], null)?.name, "a-gb", "any English voice when no en-us one");
    assert.equal(piperVoiceFor([de, gb], "de")?.name, "a-de");
    assert.equal(piperVoiceFor([gb], "fr"), undefined);
    assert.ok((await synthesizerLanguages("", dir)).includes("en-us"), "its language is one the server speaks");
  });

  test("synthesizeSpeech with a Piper voice: its sentences, at the rate asked for, with progress to 1", async () => {
    const dir = await tempDir();
    const out = join(dir, "speech.wav");
    const progress: number[] = [];
    const result = await synthesizeSpeech("One sentence. And another one!", out, {
      synthesizer: "piper",
      piperModelPath: fixture,
      workDir: dir,
      sampleRate: 16000,
      onProgress: (f) => progress.push(f),
    });
    assert.equal(result.synthesizer, "piper");
    assert.equal(result.pieces, 2);
    assert.deepEqual(progress, [0.5, 1]);
    const info = await probe(out);
    assert.equal(info.sampleRate, 16000);
    assert.ok(Math.abs(info.seconds - result.seconds) < 0.05, `${info.seconds} vs ${result.seconds}`);
    await assert.rejects(
      synthesizeSpeech("Hi.", out, {
        synthesizer: "piper",
        piperModelPath: join(dir, "absent.onnx"),
        workDir: dir,
        sampleRate: 16000,
      }),
      SynthesizerMissingError,
    );
  });

  test("synthesizeSpeech speaks a listed Piper voice with the config listPiperVoices read, without reading it again", async () => {
    const { copyFile, rm } = await import("node:fs/promises");
    const dir = await tempDir();
    await copyFile(fixture, join(dir, "voice.onnx"));
    await copyFile(`${fixture}.json`, join(dir, "voice.onnx.json"));
    const [voice] = (await listPiperVoices(dir)).voices;
    await rm(join(dir, "voice.onnx.json"));
    const result = await synthesizeSpeech("One sentence.", join(dir, "speech.wav"), {
      synthesizer: "piper",
      piperModelPath: voice!.modelPath,
      piperConfig: voice!.config,
      workDir: dir,
      sampleRate: 16000,
    });
    assert.equal(result.pieces, 1);
  });
});
