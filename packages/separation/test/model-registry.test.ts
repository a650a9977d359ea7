import assert from "node:assert/strict";
import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  ManifestError,
  ModelLoadError,
  knownArchitectures,
  MdxModel,
  ModelRegistry,
  outputStemNames,
  parseManifest,
  parseMdxManifest,
  ProviderUnavailableError,
  stftHelperRequests,
  UnknownModelError,
} from "../src/index.ts";
import { readInstalledModels } from "../src/installed-models.ts";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";
import { OnnxGraphBuilder } from "../testing/onnx-builder.ts";
import { familyFor } from "../src/families/index.ts";
import { FAMILY_DESCRIPTORS } from "../src/families/manifests.ts";

/** The registry loads any family; these tests run MDX-Net models and call MdxModel.run. */
function mdx(model: unknown): MdxModel {
  assert.ok(model instanceof MdxModel);
  return model;
}

const valid = {
  name: "vocals",
  architecture: "mdx",
  file: "vocals.onnx",
  sampleRate: 44100,
  nFft: 4096,
  hopLength: 1024,
  dimF: 1024,
  dimT: 256,
  compensate: 1.0,
  primaryStem: "vocals",
  secondaryStem: "backing",
  stems: ["vocals"],
};

describe("parseMdxManifest", () => {
  it("accepts the documented single-stem and multi-stem manifests", () => {
    assert.deepEqual(parseMdxManifest(valid, "vocals.json"), valid);
    const stems = { ...valid, name: "stems", file: "stems.onnx", stems: ["vocals", "drums", "bass", "other"] } as Record<
      string,
      unknown
    >;
    delete stems.secondaryStem;
    const parsed = parseMdxManifest(stems, "stems.json");
    assert.deepEqual(outputStemNames(parsed), ["vocals", "drums", "bass", "other", "backing"]);
    assert.deepEqual(outputStemNames(parseMdxManifest(valid, "v.json")), ["vocals", "backing"]);
  });

  it("reads graphOptimization, onnxruntime's level for the model, and leaves it out when the manifest does", () => {
    assert.equal(parseMdxManifest({ ...valid, graphOptimization: "extended" }, "x.json").graphOptimization, "extended");
    assert.equal("graphOptimization" in parseMdxManifest(valid, "x.json"), false);
  });

  it("defaults compensate to 1", () => {
    const { compensate: _, ...rest } = valid;
    assert.equal(parseMdxManifest(rest, "x.json").compensate, 1);
  });

  const broken: [string, Record<string, unknown>, RegExp][] = [
    ["another architecture", { architecture: "demucs" }, /unsupported architecture/],
    ["a dimF above nFft/2+1", { dimF: 2050 }, /"dimF"/],
    ["an odd nFft", { nFft: 4095 }, /even/],
    ["a chunk that trimming would empty", { dimT: 4 }, /nothing after trimming/],
    ["a single-stem model without secondaryStem", { secondaryStem: undefined }, /secondaryStem/],
    ["a stem name that is not a safe file name", { primaryStem: "../x", stems: ["../x"] }, /stem name/],
    ["stems not matching primaryStem", { stems: ["drums"] }, /must be \["vocals"\]/],
    ["a non-positive compensate", { compensate: 0 }, /compensate/],
    [
      "an unknown graphOptimization",
      { graphOptimization: "fast" },
      /"graphOptimization" must be one of disabled, basic, extended, all, got "fast"/,
    ],
  ];
  for (const [what, patch, message] of broken) {
    it(`rejects ${what} with a ManifestError naming the file`, () => {
      assert.throws(
        () => parseMdxManifest({ ...valid, ...patch }, "models/bad.json"),
        (err: Error) => {
          assert.ok(err instanceof ManifestError);
          assert.match(err.message, /^models\/bad\.json: /);
          assert.match(err.message, message);
          return true;
        },
      );
    });
  }
});

describe("ModelRegistry", () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-registry-test-"));
    await writeTestModel(dir, { ...SMALL, name: "identity" });
    await writeTestModel(dir, {
      ...SMALL,
      name: "two",
      stems: [
        { name: "vocals", gain: 1 },
        { name: "drums", gain: 0 },
      ],
    });
    await writeFile(join(dir, "broken.json"), '{ "name": "broken", ');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("the installed models are the valid manifests, and the invalid ones are reported", async () => {
    const { models, invalid } = await readInstalledModels(dir);
    assert.deepEqual(
      models.map((m) => m.name),
      ["identity", "two"],
    );
    assert.equal(invalid.length, 1);
    assert.match(invalid[0].path, /broken\.json$/);
  });

  it("a missing directory has no installed models", async () => {
    assert.deepEqual(await readInstalledModels(join(dir, "nope")), { models: [], invalid: [] });
  });

  it("creates one session per model and reuses it", async () => {
    const registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1, interOpThreads: 1 });
    const [a, b] = await Promise.all([registry.load("identity"), registry.load("identity")]);
    assert.equal(a, b);
    assert.equal(await registry.load("identity"), a);
    assert.equal(mdx(a).inputName, "input");
    assert.equal(mdx(a).outputName, "output");
    await registry.close();
  });

  it("loads a model again once its session can no longer run", async () => {
    const registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    try {
      const first = mdx(await registry.load("identity"));
      const spec = new Float32Array(4 * SMALL.dimF * SMALL.dimT).fill(0.5);
      assert.deepEqual((await first.run(spec, 1)).data, spec);
      await first.release(); // as when its inference thread dies
      assert.equal(first.unusable, true);
      await assert.rejects(first.run(spec, 1));
      const second = mdx(await registry.load("identity"));
      assert.notEqual(second, first);
      assert.equal(second.unusable, false);
      assert.equal(await registry.load("identity"), second);
      assert.deepEqual((await second.run(spec, 1)).data, spec);
    } finally {
      await registry.close();
    }
  });

  it("finds a model by manifest name when the file is named differently", async () => {
    await writeTestModel(dir, { ...SMALL, name: "renamed" });
    await rename(join(dir, "renamed.json"), join(dir, "my-model.json"));
    const registry = new ModelRegistry({ modelsDir: dir });
    assert.equal((await registry.load("renamed")).manifest.name, "renamed");
    await registry.close();
  });

  it("loads a model from a manifest already read, without reading the directory for it", async () => {
    const read = parseManifest(JSON.parse(await readFile(join(dir, "identity.json"), "utf8")), "identity.json");
    // no `elsewhere.json` exists, and no manifest in the directory names it: only the one given does
    const manifest = { ...read, name: "elsewhere" };
    const registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    try {
      await assert.rejects(registry.load("elsewhere"), UnknownModelError);
      const model = await registry.load(manifest);
      assert.equal(model.manifest.name, "elsewhere");
      assert.equal(await registry.load("elsewhere"), model, "kept under its name, as a model loaded by name is");
    } finally {
      await registry.close();
    }
  });

  it("refuses a manifest of an unregistered architecture with a ManifestError naming the file and the known architectures", async () => {
    const own = await mkdtemp(join(tmpdir(), "mixdown-registry-arch-"));
    try {
      const path = join(own, "drums6.json");
      const manifest = { ...valid, name: "drums6", architecture: "scnet", file: "drums6.onnx" };
      await writeFile(path, JSON.stringify(manifest));
      const expected = (err: Error) => {
        assert.ok(err instanceof ManifestError, `${err.name}: ${err.message}`);
        assert.equal(
          err.message,
          `${path}: unsupported architecture "scnet" (known: "mdx", "htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c")`,
        );
        return true;
      };
      assert.deepEqual(knownArchitectures(), ["mdx", "htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c"]);
      assert.throws(() => parseManifest(manifest, path), expected);
      const registry = new ModelRegistry({ modelsDir: own });
      await assert.rejects(registry.load("drums6"), expected);
      const { models, invalid } = await readInstalledModels(own);
      assert.deepEqual(models, []);
      assert.deepEqual(invalid, [
        {
          path,
          error: `${path}: unsupported architecture "scnet" (known: "mdx", "htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c")`,
        },
      ]);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it("rejects an unknown model name", async () => {
    await assert.rejects(new ModelRegistry({ modelsDir: dir }).load("nope"), UnknownModelError);
  });

  it("rejects a model whose input shape contradicts its manifest", async () => {
    await writeTestModel(dir, { ...SMALL, name: "mismatch" });
    const manifest = JSON.parse(await readFile(join(dir, "mismatch.json"), "utf8"));
    await writeFile(join(dir, "mismatch.json"), JSON.stringify({ ...manifest, dimF: 64 }));
    await assert.rejects(
      new ModelRegistry({ modelsDir: dir }).load("mismatch"),
      (err: Error) => err instanceof ModelLoadError && /does not match/.test(err.message),
    );
  });

  it("rejects a rank-5 model whose stem count contradicts its manifest", async () => {
    await writeTestModel(dir, {
      ...SMALL,
      name: "three",
      stems: [
        { name: "a", gain: 1 },
        { name: "b", gain: 1 },
        { name: "c", gain: 1 },
      ],
    });
    const manifest = JSON.parse(await readFile(join(dir, "three.json"), "utf8"));
    await writeFile(join(dir, "three.json"), JSON.stringify({ ...manifest, stems: ["a", "b"], primaryStem: "a" }));
    await assert.rejects(new ModelRegistry({ modelsDir: dir }).load("three"), /3 stems, the manifest lists 2/);
  });

  it("takes the first input and output when they are not called input/output", async () => {
    const g = new OnnxGraphBuilder();
    const x = g.input("mix_spec", ["batch", 4, SMALL.dimF, SMALL.dimT]);
    g.node("Identity", [x], {}, "stem_spec");
    g.output("stem_spec", ["batch", 4, SMALL.dimF, SMALL.dimT]);
    await writeFile(join(dir, "named.onnx"), g.encode());
    await writeFile(join(dir, "named.json"), JSON.stringify({ ...valid, ...SMALL, name: "named", file: "named.onnx" }));
    const registry = new ModelRegistry({ modelsDir: dir });
    const model = mdx(await registry.load("named"));
    assert.deepEqual([model.inputName, model.outputName], ["mix_spec", "stem_spec"]);
    const out = await model.run(new Float32Array(2 * 4 * SMALL.dimF * SMALL.dimT).fill(0.5), 2);
    assert.equal(out.stems, 1);
    assert.equal(out.data[17], 0.5);
    await registry.close();
  });

  // These run where neither provider can: onnxruntime-node installed without its CUDA libraries,
  // and no Vulkan GPU (Dawn finds no adapter, or refuses lavapipe). On a machine where one can
  // run, its test is skipped rather than passed.
  for (const provider of ["cuda", "webgpu"] as const) {
    it(`fails to load on ${provider} where it cannot run, naming the provider, onnxruntime's reason and what it needs`, async (t) => {
      const registry = new ModelRegistry({ modelsDir: dir, executionProvider: provider });
      try {
        const model = await registry.load("identity").catch((err: Error) => err);
        if (!(model instanceof Error)) return t.skip(`${provider} runs on this machine`);
        assert.ok(model instanceof ProviderUnavailableError, `${model.name}: ${model.message}`);
        assert.ok(model instanceof ModelLoadError);
        assert.equal(model.provider, provider);
        assert.match(
          model.message,
          new RegExp(`execution provider "${provider}" cannot run .*identity\\.onnx \\(the model runs on cpu\\)`),
        );
        assert.match(
          model.message,
          provider === "cuda" ? /Failed to load shared library.*libonnxruntime_providers_cuda/ : /adapter.*libvulkan1/,
        );
        assert.doesNotMatch(model.message, /\n/);
      } finally {
        await registry.close();
      }
    });

    it(`with providerFallback cpu, runs on cpu where ${provider} cannot and says why`, async (t) => {
      const registry = new ModelRegistry({ modelsDir: dir, executionProvider: provider, providerFallback: "cpu", thread: false });
      try {
        const model = mdx(await registry.load("identity"));
        if (model.executionProvider === provider) return t.skip(`${provider} runs on this machine`);
        assert.equal(model.executionProvider, "cpu");
        assert.match(model.fallbackReason ?? "", new RegExp(`execution provider "${provider}" cannot run`));
        const out = await model.run(new Float32Array(4 * SMALL.dimF * SMALL.dimT).fill(0.25), 1);
        assert.equal(out.data[5], 0.25);
      } finally {
        await registry.close();
      }
    });
  }

  it("blames the model, not the provider, when cpu cannot load it either", async () => {
    await writeFile(
      join(dir, "broken-on-all.json"),
      JSON.stringify({
        ...JSON.parse(await readFile(join(dir, "identity.json"), "utf8")),
        name: "broken-on-all",
        file: "broken-on-all.onnx",
      }),
    );
    await writeFile(join(dir, "broken-on-all.onnx"), "not an onnx file");
    const registry = new ModelRegistry({ modelsDir: dir, executionProvider: "webgpu", providerFallback: "cpu" });
    await assert.rejects(
      registry.load("broken-on-all"),
      (err: Error) =>
        err instanceof ModelLoadError && !(err instanceof ProviderUnavailableError) && /broken-on-all\.onnx/.test(err.message),
    );
    await registry.close();
  });

  it("warms a model up when it loads unless warmUp is off (on cpu)", async (t) => {
    if (availableParallelism() < 2) return t.skip("the STFT helper thread this test counts runs only with 2+ cores");
    const cold = new ModelRegistry({ modelsDir: dir, warmUp: false });
    const warm = new ModelRegistry({ modelsDir: dir });
    try {
      const before = stftHelperRequests();
      await cold.load("identity");
      assert.equal(stftHelperRequests(), before, "warmUp: false ran a chunk at load");
      await warm.load("identity");
      assert.ok(stftHelperRequests() > before, "the default warm-up ran no chunk at load");
    } finally {
      await Promise.all([cold.close(), warm.close()]);
    }
  });

  it("keeps no warm-up run's memory: the warmed-up session is replaced by a fresh one (on cpu)", async () => {
    // One run of this model needs 4096 copies of its input at once (~270 MB): the warmed-up
    // session's arena keeps that much for as long as the session lives.
    const g = new OnnxGraphBuilder();
    const x = g.input("input", ["batch", 4, SMALL.dimF, SMALL.dimT]);
    const copies = g.node("Expand", [x, g.int64Tensor([4096, 4, SMALL.dimF, SMALL.dimT])]);
    g.node("ReduceMean", [copies, g.int64Tensor([0])], { keepdims: 1 }, "output");
    g.output("output", [1, 4, SMALL.dimF, SMALL.dimT]);
    await writeFile(join(dir, "hungry.onnx"), g.encode(18));
    const manifest = JSON.parse(await readFile(join(dir, "identity.json"), "utf8"));
    await writeFile(join(dir, "hungry.json"), JSON.stringify({ ...manifest, name: "hungry", file: "hungry.onnx" }));
    const rssMb = () => process.memoryUsage.rss() / 2 ** 20;
    const registry = new ModelRegistry({ modelsDir: dir });
    try {
      const before = rssMb();
      const model = await registry.load("hungry");
      const held = rssMb() - before;
      assert.ok(held < 120, `the loaded model holds ${held.toFixed(0)} MB after its warm-up`);
      assert.equal(model.unusable, false);
    } finally {
      await registry.close();
      await rm(join(dir, "hungry.onnx"));
      await rm(join(dir, "hungry.json"));
    }
  });

  it("runs on cpu with no fallback reason when cpu is asked for", async () => {
    const registry = new ModelRegistry({ modelsDir: dir, providerFallback: "cpu" });
    const model = await registry.load("identity");
    assert.equal(model.executionProvider, "cpu");
    assert.equal(model.fallbackReason, undefined);
    await registry.close();
  });
});

describe("families", () => {
  it("each architecture a manifest may name has one family, whose manifest side is its descriptor's", () => {
    assert.deepEqual(
      FAMILY_DESCRIPTORS.map((d) => d.architecture),
      ["mdx", "htdemucs", "bs_roformer", "mel_band_roformer", "mdx23c"],
    );
    for (const descriptor of FAMILY_DESCRIPTORS) {
      const family = familyFor(descriptor.architecture, "test.json");
      assert.equal(family.architecture, descriptor.architecture);
      assert.equal(family.parseManifest, descriptor.parseManifest);
      assert.equal(family.outputStems, descriptor.outputStems);
      assert.equal(typeof family.load, "function");
    }
    assert.throws(() => familyFor("toString", "x.json"), /unsupported architecture "toString"/);
  });
});
