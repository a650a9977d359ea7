import assert from "node:assert/strict";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  identifyModelFile,
  ImportProblem,
  importModel,
  readTorchFile,
  TorchFileError,
  uvrModelHash,
} from "../src/import/index.ts";

const probes = fileURLToPath(new URL("./fixtures/import-probes/", import.meta.url));
const probe = (name: string) => join(probes, name);
const repoModels = fileURLToPath(new URL("../../../models/", import.meta.url));

describe("models import: telling a model file's family from its contents", () => {
  it("reads a demucs package's class and sources from its pickle, without PyTorch", async () => {
    const found = await identifyModelFile(probe("htdemucs.th"));
    assert.equal(found.family, "htdemucs");
    assert.match(found.description, /4 sources: drums, bass, other, vocals/);
  });

  it("refuses a demucs model that is not HTDemucs, naming its class", async () => {
    await assert.rejects(identifyModelFile(probe("hdemucs.th")), /class demucs\.htdemucs\.HDemucs; only HTDemucs/);
  });

  it("tells BS-RoFormer from Mel-Band RoFormer by the yaml, and reads !!python/tuple", async () => {
    assert.equal((await identifyModelFile(probe("roformer.ckpt"), { config: probe("bs.yaml") })).family, "bs_roformer");
    assert.equal(
      (await identifyModelFile(probe("roformer-wrapped.ckpt"), { config: probe("mel.yaml") })).family,
      "mel_band_roformer",
    );
  });

  it("recognises an MDX23C state dict", async () => {
    assert.equal((await identifyModelFile(probe("mdx23c.ckpt"), { config: probe("bs.yaml") })).family, "mdx23c");
  });

  it("asks for the yaml when an MSST checkpoint comes without one", async () => {
    await assert.rejects(identifyModelFile(probe("mdx23c.ckpt")), (err: Error) => {
      assert.ok(err instanceof ImportProblem);
      assert.match(err.message, /MDX23C checkpoint needs its yaml: pass --config/);
      return true;
    });
  });

  it("names an unknown state dict's first keys and the families it knows", async () => {
    await assert.rejects(
      identifyModelFile(probe("unknown.ckpt")),
      /unknown family \(its first keys: encoder\.0\.weight\); known: HTDemucs/,
    );
  });

  it("says how to re-save a legacy (pre-1.6) torch file", async () => {
    await assert.rejects(
      readTorchFile(probe("legacy.ckpt")),
      (err: Error) => err instanceof TorchFileError && /legacy/.test(err.message),
    );
  });

  it("takes a demucs bag yaml whose member files lie next to it, and lists the missing ones", async () => {
    await assert.rejects(identifyModelFile(probe("bag.yaml")), /missing d12395a8\.th/);
    const dir = await mkdtemp(join(tmpdir(), "mixdown-bag-"));
    try {
      await cp(probe("bag.yaml"), join(dir, "bag.yaml"));
      await cp(probe("htdemucs.th"), join(dir, "f7e0c4bc-ba3fe64a.th"));
      await cp(probe("htdemucs.th"), join(dir, "d12395a8.th"));
      const found = await identifyModelFile(join(dir, "bag.yaml"));
      assert.equal(found.family, "htdemucs");
      assert.match(found.description, /bag of 2 models/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("points an MSST yaml passed as the model file at --config", async () => {
    await assert.rejects(identifyModelFile(probe("bs.yaml")), /an MSST config: import its checkpoint with --config/);
  });
});

describe("models import: an MDX-Net ONNX file", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-import-"));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it("hashes the last 10,240,000 bytes as UVR does (the whole file when shorter)", async () => {
    const file = join(dir, "short.bin");
    await writeFile(file, "abc");
    assert.equal(await uvrModelHash(file), "900150983cd24fb0d6963f7d28e17f72");
  });

  it("finds its geometry in UVR's model_data table by hash, installs it, and runs it", async () => {
    const source = join(dir, "uvr");
    await cp(join(repoModels, "vocals.onnx"), join(source, "UVR-MDX-NET-Test.onnx"), { recursive: true });
    const hash = await uvrModelHash(join(source, "UVR-MDX-NET-Test.onnx"));
    await writeFile(
      join(source, "model_data.json"),
      JSON.stringify({
        [hash]: {
          compensate: 1.035,
          mdx_dim_f_set: 1024,
          mdx_dim_t_set: 8,
          mdx_n_fft_scale_set: 4096,
          primary_stem: "Instrumental",
        },
      }),
    );
    const modelsDir = join(dir, "models");
    const imported = await importModel({ file: join(source, "UVR-MDX-NET-Test.onnx"), modelsDir });
    assert.equal(imported.name, "UVR-MDX-NET-Test");
    assert.deepEqual(imported.stems.sort(), ["backing", "vocals"]);
    const manifest = JSON.parse(await readFile(join(modelsDir, "UVR-MDX-NET-Test.json"), "utf8"));
    assert.deepEqual(
      {
        nFft: manifest.nFft,
        dimF: manifest.dimF,
        dimT: manifest.dimT,
        compensate: manifest.compensate,
        primary: manifest.primaryStem,
      },
      { nFft: 4096, dimF: 1024, dimT: 256, compensate: 1.035, primary: "backing" },
    );
    await assert.rejects(
      importModel({ file: join(source, "UVR-MDX-NET-Test.onnx"), modelsDir }),
      /a model named "UVR-MDX-NET-Test" is installed already/,
    );
  });

  it("refuses a model that does not run at the geometry given, and installs nothing", async () => {
    const modelsDir = join(dir, "models-bad");
    await assert.rejects(
      importModel({
        file: join(repoModels, "vocals.onnx"),
        modelsDir,
        name: "wrong",
        mdx: { nFft: 4096, dimF: 2048, dimT: 256 },
      }),
      /does not match the manifest/,
    );
    const { readdir } = await import("node:fs/promises");
    assert.deepEqual(await readdir(modelsDir), []);
  });

  it("says which table it looked in when the hash is not there", async () => {
    await assert.rejects(identifyModelFile(join(repoModels, "vocals.onnx")), /not in UVR's model_data table .*pass --model-data/);
  });
});
