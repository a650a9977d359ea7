import assert from "node:assert/strict";
import { copyFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";
import { after, test } from "node:test";
import { catalogue, files, folder, mirror } from "./model-mirror.ts";
import { repoRoot } from "./run-cli.ts";
import { type RunningUp, startUp } from "./run-up.ts";

const ups: RunningUp[] = [];
after(async () => {
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
});

test(
  "MIXDOWN_MODELS under up: a missing model is pulled before the worker starts and becomes the default of the kinds it serves",
  { timeout: 240_000 },
  async () => {
    const dir = await folder();
    const models = path.join(dir, "models");
    await mkdir(models);
    for (const f of ["stems", "vocals", "vocalsplit"])
      for (const ext of ["json", "onnx"])
        await copyFile(path.join(repoRoot, "models", `${f}.${ext}`), path.join(models, `${f}.${ext}`));
    const { base, seen } = await mirror(files);
    const up = await startUp({
      MODELS_DIR: models,
      MIXDOWN_MODELS: "Test_Vocal",
      MIXDOWN_MODEL_CATALOGUE: await catalogue(dir),
      MIXDOWN_MODEL_MIRROR: base,
    });
    ups.push(up);
    const key = await up.key;
    const banner = up.stdout();
    assert.match(banner, /^installed Test_Vocal \(mdx; stems vocals, backing\)/m);
    assert.ok(banner.indexOf("installed Test_Vocal") < banner.indexOf("Mixdown is up."), "pulled before the service started");
    assert.deepEqual(
      seen.map((s) => s.path),
      ["/uvr/Test_Vocal.onnx"],
    );
    assert.match(up.stderr(), /SEPARATION_MODEL_VOCALS=Test_Vocal \(the first of MIXDOWN_MODELS that serves it\)/);
    assert.ok((await readdir(models)).includes("Test_Vocal.onnx"));

    const listed = await fetch(`${up.baseUrl}/api/kits/v1/separation-models`, { headers: { authorization: `Bearer ${key}` } });
    const { data } = (await listed.json()) as { data: { name: string; default: object }[] };
    const byName = new Map(data.map((m) => [m.name, m.default]));
    // A single-stem model serves vocal separations only: stem splits keep their setting's default.
    assert.deepEqual(byName.get("Test_Vocal"), { vocalSeparation: true, stemSplit: false });
    assert.deepEqual(byName.get("stems"), { vocalSeparation: false, stemSplit: true });
  },
);
