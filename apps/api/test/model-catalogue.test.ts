import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { startHarness, type Harness } from "./helpers.ts";

const REPO_MODELS = resolve(import.meta.dirname, "../../../models");

let h: Harness;
let modelsDir: string;
before(async () => {
  // Installed here: a separation model named as a catalogue entry, and the RMVPE asset.
  modelsDir = await mkdtemp(join(tmpdir(), "mixdown-api-catalogue-"));
  await copyFile(join(REPO_MODELS, "vocals.onnx"), join(modelsDir, "Kim_Vocal_2.onnx"));
  const manifest = JSON.parse(await readFile(join(REPO_MODELS, "vocals.json"), "utf8")) as Record<string, unknown>;
  await writeFile(
    join(modelsDir, "Kim_Vocal_2.json"),
    JSON.stringify({ ...manifest, name: "Kim_Vocal_2", file: "Kim_Vocal_2.onnx" }),
  );
  await mkdir(join(modelsDir, "voices"));
  await writeFile(join(modelsDir, "voices", "rmvpe.onnx"), "x");
  h = await startHarness("s3", { MODELS_DIR: modelsDir });
});
after(async () => {
  await h?.stop();
  await rm(modelsDir, { recursive: true, force: true });
});

test("GET /model-catalogue lists every catalogue entry with what is installed here and the command that installs it", async () => {
  const caller = await h.newCaller();
  const res = await h.app.inject({ method: "GET", url: "/api/kits/v1/model-catalogue", headers: caller.auth });
  assert.equal(res.statusCode, 200, res.body);
  const catalogue = JSON.parse(await readFile(join(REPO_MODELS, "catalogue.json"), "utf8")) as { models: { name: string }[] };
  const { data } = res.json() as { data: { name: string; installed: boolean; install: string; verifiedBy: string[] }[] };
  assert.deepEqual(
    data.map((m) => m.name),
    catalogue.models.map((m) => m.name),
  );
  const byName = new Map(data.map((m) => [m.name, m]));
  assert.deepEqual(
    data.filter((m) => m.installed).map((m) => m.name),
    ["Kim_Vocal_2", "rmvpe"],
  );
  assert.equal(byName.get("htdemucs_ft")!.install, "./mixdown.sh models pull htdemucs_ft");
  assert.deepEqual(byName.get("htdemucs_ft")!.verifiedBy.sort(), ["sha256", "sha256-prefix", "size"]);
  assert.deepEqual(byName.get("Kim_Vocal_2")!.verifiedBy, ["uvr-hash"]);
  assert.deepEqual(byName.get("hubert")!, {
    ...byName.get("hubert")!,
    kind: "voice-asset",
    stems: [],
    installed: false,
    verifiedBy: ["sha256"],
  });

  const anonymous = await h.app.inject({ method: "GET", url: "/api/kits/v1/model-catalogue" });
  assert.equal(anonymous.statusCode, 401);
});
