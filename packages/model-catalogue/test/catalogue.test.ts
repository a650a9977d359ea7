import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CatalogueError, readModelCatalogue, SEPARATION_FAMILIES } from "../src/index.ts";

const catalogue = await readModelCatalogue();

test("the committed catalogue is valid: every entry names a known family, its files, a licence, a source and its evidence", () => {
  assert.ok(catalogue.models.length >= 15);
  for (const m of catalogue.models) {
    assert.ok(m.evidence.length > 0, m.name);
    if (m.kind === "separation") assert.ok((SEPARATION_FAMILIES as readonly string[]).includes(m.family), m.name);
    for (const f of m.files) {
      assert.match(f.url, /^https:\/\//, `${m.name}: ${f.name}`);
      // A file is checked by a full hash, or the entry says why not and checks what it can.
      if (f.sha256 === null) assert.ok(f.noHash && f.noHash.length > 10, `${m.name}: ${f.name}`);
    }
  }
});

test("the catalogue has the models people use: the demucs v4 family, the RoFormers, MDX23C, UVR's MDX-Net and RVC's assets", () => {
  const names = new Set(catalogue.models.map((m) => m.name));
  for (const name of [
    "htdemucs",
    "htdemucs_ft",
    "htdemucs_6s",
    "model_bs_roformer_ep_317_sdr_12.9755",
    "MelBandRoformer",
    "model_vocals_mdx23c_sdr_10.17",
    "UVR-MDX-NET-Voc_FT",
    "Kim_Vocal_2",
    "UVR-MDX-NET-Inst_HQ_3",
    "hubert",
    "rmvpe",
  ])
    assert.ok(names.has(name), name);
});

test("demucs checkpoints carry the first 8 hex digits of their SHA-256 in their names, and the catalogue checks exactly those", () => {
  const demucs = catalogue.models.filter((m) => m.family === "htdemucs");
  assert.equal(demucs.length, 3);
  for (const m of demucs)
    for (const f of m.files.filter((f) => f.name.endsWith(".th"))) {
      assert.match(f.url, /^https:\/\/dl\.fbaipublicfiles\.com\/demucs\/hybrid_transformer\//);
      assert.equal(f.sha256Prefix, /^[0-9a-f]{8}-([0-9a-f]{8})\.th$/.exec(f.name)?.[1], f.name);
    }
  const bag = catalogue.models.find((m) => m.name === "htdemucs_ft")!;
  assert.equal(bag.importFile, "htdemucs_ft.yaml");
  assert.equal(bag.files.filter((f) => f.name.endsWith(".th")).length, 4);
});

test("RVC's assets are pinned to the SHA-256 RVC itself pins", () => {
  const sha = (name: string) => catalogue.models.find((m) => m.name === name)!.files[0]!.sha256;
  assert.equal(sha("hubert"), "f54b40fd2802423a5643779c4861af1e9ee9c1564dc9d32f54f20b5ffba7db96");
  assert.equal(sha("rmvpe"), "6d62215f4306e3ca278246188607209f09af3dc77ed4232efdd069798c4ec193");
});

test("configs in git repositories are pinned to a commit, with their size and SHA-256; MDX-Net models carry their geometry and UVR hash", () => {
  for (const m of catalogue.models) {
    for (const f of m.files.filter((f) => f.url.startsWith("https://raw.githubusercontent.com/"))) {
      assert.match(f.url, /^https:\/\/raw\.githubusercontent\.com\/[^/]+\/[^/]+\/[0-9a-f]{40}\//, f.url);
      assert.ok(f.sha256 && f.sizeBytes, f.url);
    }
    if (m.family === "mdx") {
      assert.ok(m.mdx, m.name);
      assert.match(m.files[0]!.uvrHash ?? "", /^[0-9a-f]{32}$/, m.name);
    }
  }
});

test("a broken catalogue is refused with every problem named by its entry", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mixdown-catalogue-test-"));
  try {
    const path = join(dir, "catalogue.json");
    const entry = structuredClone(catalogue.models.find((m) => m.name === "Kim_Vocal_2")!);
    entry.files[0]!.noHash = undefined as unknown as string;
    delete entry.files[0]!.noHash;
    const noMdx = { ...entry, name: "NoGeometry", mdx: undefined };
    delete noMdx.mdx;
    const wrongImport = { ...entry, name: "WrongImport", importFile: "other.onnx" };
    await writeFile(path, JSON.stringify({ version: 1, models: [entry, noMdx, wrongImport, { ...entry }] }));
    await assert.rejects(readModelCatalogue(path), (err: unknown) => {
      assert.ok(err instanceof CatalogueError);
      assert.match(err.message, /Kim_Vocal_2\.files\.0: a file without sha256 must say why in noHash/);
      assert.match(err.message, /NoGeometry: mdx geometry goes with, and only with, family mdx/);
      assert.match(err.message, /WrongImport: importFile other\.onnx is not one of its files/);
      assert.match(err.message, /two entries are named Kim_Vocal_2/);
      return true;
    });
    await writeFile(path, "{");
    await assert.rejects(readModelCatalogue(path), /catalogue\.json: .*JSON/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the separation docs' catalogue table names every entry", async () => {
  const readme = await readFile(new URL("../../../docs/separation.md", import.meta.url), "utf8");
  for (const m of catalogue.models) assert.ok(readme.includes(`| \`${m.name}\` | ${m.family} |`), m.name);
});
