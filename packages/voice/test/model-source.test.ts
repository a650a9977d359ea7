import assert from "node:assert/strict";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { downloadUrlOf, ModelSourceError, unpackVoiceModel } from "../src/import/model-source.ts";
import { tempDir } from "./support.ts";
import { writeZip } from "./zip-writer.ts";

const fixture = (name: string) => readFile(new URL(`./fixtures/${name}`, import.meta.url));
const limits = { maxModelBytes: 4 * 1024 * 1024, maxIndexBytes: 4 * 1024 * 1024 };

async function unpackZip(entries: Parameters<typeof writeZip>[1]) {
  const dir = await tempDir();
  const zip = join(dir, "shared.zip");
  await writeZip(zip, entries);
  const out = join(dir, "unpacked");
  return { dir, out, result: unpackVoiceModel(zip, out, limits) };
}

describe("voice models from a link", () => {
  it("rewrites Hugging Face /blob/ page links to /resolve/ and leaves other URLs alone", () => {
    assert.equal(
      downloadUrlOf("https://huggingface.co/someone/voices/blob/main/singer/model.pth"),
      "https://huggingface.co/someone/voices/resolve/main/singer/model.pth",
    );
    assert.equal(
      downloadUrlOf("https://huggingface.co/datasets/someone/rvc/blob/v1.0/a.zip?download=true"),
      "https://huggingface.co/datasets/someone/rvc/resolve/v1.0/a.zip?download=true",
    );
    assert.equal(
      downloadUrlOf("https://huggingface.co/someone/voices/resolve/main/model.pth"),
      "https://huggingface.co/someone/voices/resolve/main/model.pth",
    );
    assert.equal(downloadUrlOf("https://example.com/a/blob/main/model.pth"), "https://example.com/a/blob/main/model.pth");
  });

  it("unpacks the one .pth and the one .index of a shared zip, ignoring folders, __MACOSX and .DS_Store", async () => {
    const pth = await fixture("rvc-pth/rvc-v2-48k.pth");
    const index = await fixture("rvc-index/ivf-flat-768.index");
    const { out, result } = await unpackZip([
      { name: "Singer/", data: Buffer.alloc(0), stored: true },
      { name: "Singer/Singer.pth", data: pth, stored: true },
      { name: "Singer/added_IVF256_Flat_nprobe_1_Singer_v2.index", data: index },
      { name: "__MACOSX/Singer/._Singer.pth", data: Buffer.from("resource fork") },
      { name: "Singer/.DS_Store", data: Buffer.from("finder") },
      { name: "Singer/README.txt", data: Buffer.from("made with RVC") },
    ]);
    const unpacked = await result;
    assert.deepEqual(unpacked, {
      modelPath: join(out, "model.pth"),
      indexPath: join(out, "model.index"),
      archive: { model: "Singer/Singer.pth", index: "Singer/added_IVF256_Flat_nprobe_1_Singer_v2.index" },
    });
    assert.ok((await readFile(unpacked.modelPath)).equals(pth));
    assert.ok((await readFile(unpacked.indexPath!)).equals(index));
    assert.deepEqual((await readdir(out)).sort(), ["model.index", "model.pth"], "nothing else is unpacked");
  });

  it("takes a .pth (itself a zip: torch.save's data.pkl inside) and a non-zip file as the model file itself", async () => {
    const dir = await tempDir();
    for (const name of ["rvc-pth/rvc-v1-40k.pth", "rvc-pth/rvc-v1-40k.onnx"]) {
      const path = new URL(`./fixtures/${name}`, import.meta.url).pathname;
      assert.deepEqual(await unpackVoiceModel(path, join(dir, "out"), limits), { modelPath: path });
    }
  });

  it("refuses a zip with a ../ path (zip-slip) and unpacks nothing", async () => {
    for (const name of ["../evil.pth", "voices/../../evil.pth", "/etc/evil.pth"]) {
      const { dir, out, result } = await unpackZip([
        { name: "model.pth", data: Buffer.from("x") },
        { name, data: Buffer.from("owned") },
      ]);
      await assert.rejects(result, (err: Error) => {
        assert.ok(err instanceof ModelSourceError, err.message);
        assert.match(err.message, /outside its folder|leads out|absolute path/);
        return true;
      });
      await assert.rejects(stat(out), "the unpack folder was never made");
      await assert.rejects(stat(join(dir, "..", "evil.pth")));
    }
  });

  it("refuses a zip bomb: counts the bytes as they inflate, whatever the header says, and stops at the limit", async () => {
    const zeros = Buffer.alloc(64 * 1024 * 1024);
    const honest = await unpackZip([{ name: "bomb.pth", data: zeros }]);
    await assert.rejects(honest.result, /bomb\.pth unpacks to 67108864 bytes, over the limit of 4194304/);
    // The headers claim 1000 bytes: the inflated stream is stopped anyway.
    const lying = await unpackZip([{ name: "bomb.pth", data: zeros, declaredSize: 1000 }]);
    await assert.rejects(lying.result, (err: Error) => {
      assert.ok(err instanceof ModelSourceError);
      assert.match(err.message, /bomb\.pth unpacks to more than the 1000 bytes its header states \(a zip bomb\?\); refused/);
      return true;
    });
    const written = await stat(join(lying.out, "model.pth")).then((s) => s.size);
    assert.ok(written <= limits.maxModelBytes, `${written} bytes written`);
    // The index has its own limit.
    const index = await unpackZip([
      { name: "m.onnx", data: Buffer.from("onnx") },
      { name: "m.index", data: Buffer.alloc(5 * 1024 * 1024), declaredSize: 10 },
    ]);
    await assert.rejects(index.result, /m\.index/);
  });

  it("refuses a zip with no model, with two models, or with two indexes, naming what it holds", async () => {
    const none = await unpackZip([{ name: "notes.txt", data: Buffer.from("hi") }]);
    await assert.rejects(none.result, /holds no voice model \(a \.pth or \.onnx file\); it holds notes\.txt/);
    const two = await unpackZip([
      { name: "a.pth", data: Buffer.from("a") },
      { name: "G_2333.pth", data: Buffer.from("b") },
    ]);
    await assert.rejects(two.result, /holds 2 model files \(a\.pth, G_2333\.pth\); it must hold exactly one/);
    const indexes = await unpackZip([
      { name: "a.pth", data: Buffer.from("a") },
      { name: "trained.index", data: Buffer.from("b") },
      { name: "added.index", data: Buffer.from("c") },
    ]);
    await assert.rejects(indexes.result, /holds 2 \.index files \(trained\.index, added\.index\); it may hold at most one/);
    const dir = await tempDir();
    const broken = join(dir, "broken.zip");
    await writeZip(broken, [{ name: "a.pth", data: Buffer.from("a") }]);
    const bytes = await readFile(broken);
    await import("node:fs/promises").then((fs) => fs.writeFile(broken, bytes.subarray(0, bytes.length - 10)));
    await assert.rejects(unpackVoiceModel(broken, join(dir, "out"), limits), /not a readable zip/);
  });
});
