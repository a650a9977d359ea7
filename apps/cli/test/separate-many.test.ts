import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { probeAudio } from "@mixdown/audio";
import { separateCommand } from "../src/commands/separate.ts";
import { repoRoot } from "./run-cli.ts";

const run = promisify(execFile);

/** `separateCommand` in this process, with what it writes kept. */
async function separate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await separateCommand(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/** Every file under `dir` (relative path → bytes), hidden ones included. */
async function tree(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const file = path.join(entry.parentPath, entry.name);
      files.set(path.relative(dir, file), await readFile(file));
    }
  return files;
}

async function tone(file: string, frequency: number, codec: string[] = []): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", `sine=f=${frequency}:r=44100:d=1`, "-ac", "2", ...codec, file]);
}

const children: ChildProcess[] = [];

describe("mixdown separate over many files", () => {
  let dir: string;
  let input: string;
  let reference: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-separate-many-"));
    input = path.join(dir, "music");
    await tone(path.join(input, "one.wav"), 220);
    await tone(path.join(input, "two.flac"), 330);
    // the same name as the top folder's one.wav, in a subfolder: its own output folder
    await tone(path.join(input, "sub", "one.mp3"), 440, ["-c:a", "libmp3lame"]);
    await writeFile(path.join(input, "notes.txt"), "take 3 was the good one\n");
    reference = path.join(dir, "reference");
  });
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });

  test("separates every audio file of a folder tree into a folder of its own, skips what is not audio, and a rerun skips them all", async () => {
    const first = await separate([input, "--model", "vocals", "--out", reference]);
    assert.equal(first.code, 0, first.stderr);
    const made = await tree(reference);
    assert.deepEqual(
      [...made.keys()].sort(),
      ["one", "sub/one", "two"].flatMap((folder) =>
        [".mixdown-separate.json", "backing.wav", "vocals.wav"].map((f) => path.join(folder, f)),
      ),
    );
    assert.match(first.stderr, /^skipped notes\.txt: not wav, mp3, flac or webm by its content$/m);
    assert.match(first.stderr, /^\[3\/3\] two\.flac: separated in [\d.]+ s into .*\/reference\/two$/m);
    assert.match(
      first.stderr,
      /^mixdown separate: 3 separated, 0 skipped \(already separated\), 1 skipped \(not audio\), 0 failed in [\d.]+ s$/m,
    );
    // one stdout line per stem, and the models loaded once: only the first file's timings count a load
    assert.match(first.stdout, new RegExp(`^vocals\\t${reference}/sub/one/vocals\\.wav$`, "m"));
    assert.equal(first.stdout.match(/model load \d+ ms/g)?.length, 1);
    assert.equal(first.stdout.match(/models loaded once for the run/g)?.length, 2);
    const [source, vocals] = await Promise.all([
      probeAudio(path.join(input, "two.flac")),
      probeAudio(path.join(reference, "two", "vocals.wav")),
    ]);
    assert.equal(vocals.frames, source.frames);

    const again = await separate([input, "--model", "vocals", "--out", reference]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "");
    assert.match(again.stderr, /^skipped sub\/one\.mp3: already separated in .*\/reference\/sub\/one$/m);
    assert.match(again.stderr, /3 skipped \(already separated\), 1 skipped \(not audio\), 0 failed/);
    assert.deepEqual(await tree(reference), made);

    // other settings are other stems: the rerun that asks for them separates again
    const changed = path.join(dir, "changed");
    await cp(reference, changed, { recursive: true });
    const flac = await separate([input, "--model", "vocals", "--stems", "vocals", "--format", "flac", "--out", changed]);
    assert.equal(flac.code, 0, flac.stderr);
    assert.match(flac.stderr, /3 separated, 0 skipped \(already separated\)/);
    assert.deepEqual((await readdir(path.join(changed, "sub", "one"))).sort(), [
      ".mixdown-separate.json",
      "backing.wav",
      "vocals.flac",
      "vocals.wav",
    ]);
  });

  test("reports a file that does not decode, goes on with the others and exits 1; the output folder inside the input folder is not read as input", async () => {
    const songs = path.join(dir, "songs");
    await tone(path.join(songs, "song.wav"), 550);
    // an ID3 tag, then nothing an mp3 decoder can read: audio by its first bytes, yet it fails
    await writeFile(
      path.join(songs, "song.mp3"),
      Buffer.concat([Buffer.from("ID3\x03\0\0\0\0\0\0", "latin1"), Buffer.alloc(4000, 7)]),
    );
    const out = path.join(songs, "stems");
    for (const attempt of [1, 2]) {
      const result = await separate([songs, "--model", "vocals", "--out", out]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^failed: song\.mp3: not decodable audio: /m);
      assert.match(
        result.stderr,
        attempt === 1
          ? /^mixdown separate: 1 separated, 0 skipped \(already separated\), 0 skipped \(not audio\), 1 failed in /m
          : /^mixdown separate: 0 separated, 1 skipped \(already separated\), 0 skipped \(not audio\), 1 failed in /m,
      );
      // song.wav and song.mp3 would share out/song/: each keeps its extension; the failed one leaves nothing
      assert.deepEqual([...(await tree(out)).keys()].sort(), [
        "song.wav/.mixdown-separate.json",
        "song.wav/backing.wav",
        "song.wav/vocals.wav",
      ]);
    }
    const named = await separate([path.join(dir, "music", "notes.txt"), "--model", "vocals", "--out", path.join(dir, "named")]);
    assert.equal(named.code, 1);
    assert.match(named.stderr, /1 failed/);
    const missing = await separate([path.join(dir, "nothing-here"), "--model", "vocals", "--out", out]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nothing-here: no such file or folder/);
  });

  test("a run killed mid-file and one stopped by Ctrl-C leave nothing a rerun takes as done; the rerun finishes with the stems of an uninterrupted run and no leftovers", async () => {
    const out = path.join(dir, "interrupted");
    const args = ["--import", "tsx", "apps/cli/src/main.ts", "separate", input, "--model", "vocals", "--out", out];
    /** Starts the command and stops it with `signal` once file `index` has begun writing its stems. */
    async function stopWhileWriting(index: number, signal: NodeJS.Signals) {
      const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ["ignore", "ignore", "pipe"] });
      children.push(child);
      let stderr = "";
      child.stderr!.on("data", (chunk) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      const partial = path.join(out, ["one", "sub/one", "two"][index - 1]!, `.mixdown-partial-${child.pid}`);
      const deadline = Date.now() + 60_000;
      while (!((await readdir(partial).catch(() => [])).length > 0)) {
        assert.ok(Date.now() < deadline, `file ${index} never began: ${stderr}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      child.kill(signal);
      return { code: await exited, stderr, partial };
    }

    const killed = await stopWhileWriting(1, "SIGKILL");
    assert.ok((await stat(killed.partial)).isDirectory(), "a killed run leaves its half-written stems");

    const stopped = await stopWhileWriting(2, "SIGINT");
    assert.equal(stopped.code, 130, stopped.stderr);
    assert.match(stopped.stderr, /^removed 1 unfinished output folder\(s\) an interrupted run left in /m);
    assert.match(stopped.stderr, /^\[2\/3\] sub\/one\.mp3: interrupted, its unfinished stems removed$/m);
    assert.match(stopped.stderr, /1 separated, .* interrupted with 2 left to do/);
    assert.deepEqual(
      [...(await tree(out)).keys()].filter((f) => f.includes(".mixdown-partial-")),
      [],
      "Ctrl-C removes its own half-written stems",
    );
    assert.deepEqual(
      [...(await tree(out)).keys()].filter((f) => !f.startsWith("one/")),
      [],
    );

    const rerun = await separate([input, "--model", "vocals", "--out", out]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /2 separated, 1 skipped \(already separated\)/);
    // every byte the same, the records of what was made included, and nothing else there
    assert.deepEqual(await tree(out), await tree(reference));
  });
});
