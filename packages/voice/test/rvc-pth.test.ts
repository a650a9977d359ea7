import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ensurePyTorch } from "@mixdown/separation/import";
import { describe, it } from "node:test";
import { ort } from "@mixdown/separation/ort";
import { VOICE_PYTHON_PATH } from "../src/import/python-path.ts";
import { nsfSource } from "../src/rvc/nsf-source.ts";
import { tempDir } from "./support.ts";
import { snrDb } from "../../audio/test/support/fixtures.ts";

const dir = new URL("./fixtures/rvc-pth/", import.meta.url);
const bytes = async (name: string) => {
  const b = await readFile(new URL(name, dir));
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
};
const snr = (reference: Float32Array, ours: Float32Array) => {
  assert.equal(ours.length, reference.length);
  return snrDb(reference, ours);
};
// Debian's PyTorch, as the import commands get it: installed here when missing (the test setup is root), never skipped.
const torchPython = await ensurePyTorch(() => {});

async function synthesize(onnx: string, ref: string) {
  const meta = JSON.parse(new TextDecoder().decode(await bytes(`${ref}/reference.json`))) as {
    frames: number;
    sampleRate: number;
    hop: number;
    f0: number;
  };
  const T = meta.frames;
  const phone = new Float32Array(await bytes(`${ref}/phone.f32`));
  const rnd = new Float32Array(await bytes(`${ref}/rnd.f32`));
  const session = await ort.InferenceSession.create(onnx);
  const common = {
    phone: new ort.Tensor("float32", phone, [1, T, phone.length / T]),
    rnd: new ort.Tensor("float32", rnd, [1, rnd.length / T, T]),
    sid: new ort.Tensor("int64", BigInt64Array.of(0n), [1]),
  };
  if (meta.f0 === 0) {
    const out = await session.run(common);
    await session.release();
    return { source: undefined, audio: out.audio!.data as Float32Array };
  }
  const source = nsfSource(
    new Float32Array(await bytes(`${ref}/pitchf.f32`)),
    meta.sampleRate,
    meta.hop,
    new Float32Array(await bytes(`${ref}/sine-noise.f32`)),
  );
  const out = await session.run({
    ...common,
    pitch: new ort.Tensor("int64", new BigInt64Array(await bytes(`${ref}/pitch.i64`)), [1, T]),
    source: new ort.Tensor("float32", source, [1, 1, source.length]),
  });
  await session.release();
  return { source, audio: out.audio!.data as Float32Array };
}

describe("RVC .pth converted by Mixdown's own synthesizer: RVC's forward, exactly", () => {
  for (const name of ["v2-48k", "v1-40k"]) {
    it(`${name}: the excitation computed in TypeScript and the exported graph give RVC's audio at 50 dB or more`, async () => {
      const ref = `reference-${name}`;
      const { source, audio } = await synthesize(new URL(`rvc-${name}.onnx`, dir).pathname, ref);
      const sourceSnr = snr(new Float32Array(await bytes(`${ref}/source.f32`)), source!);
      const audioSnr = snr(new Float32Array(await bytes(`${ref}/audio.f32`)), audio);
      console.log(`${name}: excitation ${sourceSnr.toFixed(1)} dB, audio ${audioSnr.toFixed(1)} dB against RVC`);
      assert.ok(sourceSnr >= 60, `excitation ${sourceSnr} dB`);
      assert.ok(audioSnr >= 50, `audio ${audioSnr} dB`);
    });
  }

  it("v1-40k without f0: the exported graph (no pitch, no excitation) gives RVC's audio at 50 dB or more", async () => {
    const { audio } = await synthesize(new URL("rvc-v1-40k-nof0.onnx", dir).pathname, "reference-v1-40k-nof0");
    const audioSnr = snr(new Float32Array(await bytes("reference-v1-40k-nof0/audio.f32")), audio);
    console.log(`v1-40k without f0: audio ${audioSnr.toFixed(1)} dB against RVC`);
    assert.ok(audioSnr >= 50, `audio ${audioSnr} dB`);
  });

  it("a .pth whose pickle would run code is refused before anything in it runs (torch.save's zip and the legacy format)", async () => {
    const work = await tempDir();
    const marker = join(work, "ran");
    // What a malicious upload does: an object whose unpickling calls os.system.
    execFileSync(torchPython, [
      "-c",
      `import os, torch
class Payload:
    def __reduce__(self):
        return (os.system, (${JSON.stringify(`touch ${marker}`)},))
for path, zipped in ((${JSON.stringify(join(work, "zip.pth"))}, True), (${JSON.stringify(join(work, "legacy.pth"))}, False)):
    torch.save({"weight": {}, "config": Payload()}, path, _use_new_zipfile_serialization=zipped)`,
    ]);
    assert.equal(existsSync(marker), false, "saving does not run the payload");
    for (const name of ["zip.pth", "legacy.pth"]) {
      const run = spawnSync(torchPython, ["-m", "mixdown_voice.export_rvc", join(work, name), join(work, "out.onnx")], {
        env: { ...process.env, PYTHONPATH: VOICE_PYTHON_PATH },
        encoding: "utf8",
      });
      assert.equal(run.status, 2, `${name}: ${run.stderr}`);
      assert.match(run.stderr, /^not a PyTorch file \(UnpicklingError: /m, name);
      assert.equal(existsSync(marker), false, `${name}: the payload did not run`);
      assert.equal(existsSync(join(work, "out.onnx")), false);
    }
  });

  it("the converter makes that graph from the .pth (needs Debian's python3-torch)", async () => {
    const out = join(await tempDir(), "v2.onnx");
    const printed = execFileSync(torchPython, ["-m", "mixdown_voice.export_rvc", new URL("rvc-v2-48k.pth", dir).pathname, out], {
      env: { ...process.env, PYTHONPATH: VOICE_PYTHON_PATH },
      stdio: ["ignore", "pipe", "ignore"],
    }).toString();
    assert.deepEqual(JSON.parse(printed.trim().split("\n").pop()!), {
      version: "v2",
      f0: 1,
      sampleRate: 48000,
      speakers: 3,
      hop: 480,
      inter: 8,
    });
    const { audio } = await synthesize(out, "reference-v2-48k");
    assert.ok(snr(new Float32Array(await bytes("reference-v2-48k/audio.f32")), audio) >= 50);
  });
});
