import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { decode } from "fast-png";
import { writeContentVecSignatureModel } from "@mixdown/voice";
import { readVoiceCatalogue } from "@mixdown/voice/catalogue";
import { COVER_SIZE } from "../src/kinds/voice-model-media/cover.ts";
import {
  decodeFloat,
  download,
  getJson,
  postForm,
  probe,
  startDeployment,
  waitForEnd,
  type Deployment,
} from "../testing/harness.ts";

const run = promisify(execFile);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Length of apps/worker/assets/demo-phrase.wav: a conversion keeps the input's length. */
const PHRASE_SECONDS = 3.27;

describe("voice model media (demo clip and cover) rendered by the worker", () => {
  let d: Deployment;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "voice-media-e2e-"));
    // Native voices never load ContentVec; the conversion threads only need a file to point at.
    await writeFile(join(dir, "contentvec.onnx"), writeContentVecSignatureModel());
    d = await startDeployment({
      WORKER_QUEUES: "voice-blend,voice-conversion,voice-model-media",
      VOICE_CONTENTVEC_MODEL: join(dir, "contentvec.onnx"),
    });
  });
  after(async () => {
    await d?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const isStableRoute = (url: string, id: number) =>
    /^\/api\/kits\/v1\/voice-models\/\d+\/(image|demo)$/.test(new URL(url).pathname) && url.includes(`/${id}/`);

  /** The model's record once the worker has rendered both its demo and its cover. */
  async function waitForMedia(id: number, timeoutMs = 240_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const model = await getJson(d, `voice-models/${id}`);
      if (!isStableRoute(model.demoUrl, id) && !isStableRoute(model.imageUrl, id)) return model;
      const row = await d.prisma.voiceModel.findUniqueOrThrow({ where: { id } });
      assert.equal(row.mediaError, null, `the media of voice model ${id} failed: ${row.mediaError}`);
      if (Date.now() > deadline) throw new Error(`voice model ${id} has no media after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Checks the demo (an audible mp3 of the reference phrase's length) and returns the cover's bytes. */
  async function assertMedia(model: any): Promise<Buffer> {
    assert.match(model.demoUrl, new RegExp(`voice-models/${model.id}/demo\\.mp3`));
    const demoPath = await download(model.demoUrl);
    const demo = await probe(demoPath);
    assert.equal(demo.codec, "mp3");
    assert.ok(
      Math.abs(demo.duration - PHRASE_SECONDS) < 0.3,
      `demo lasts ${demo.duration} s, expected about ${PHRASE_SECONDS} s`,
    );
    const samples = await decodeFloat(demoPath);
    const rms = Math.sqrt(samples.reduce((sum, v) => sum + v * v, 0) / samples.length);
    assert.ok(rms > 0.01, `the demo is audible speech, not silence (rms ${rms.toFixed(4)})`);
    return readFile(await download(model.imageUrl));
  }

  async function assertGeneratedCover(model: any): Promise<Buffer> {
    const cover = await assertMedia(model);
    assert.deepEqual(cover.subarray(0, 8), PNG_SIGNATURE);
    const png = decode(cover);
    assert.equal(png.width, COVER_SIZE);
    assert.equal(png.height, COVER_SIZE);
    return cover;
  }

  const post = (route: string, parts: Record<string, string | { path: string }>) => postForm(d, route, parts);

  it("the default catalogue gets a demo and a distinct cover per voice after the worker starts", async () => {
    // Nothing registers the catalogue here but the worker's own start.
    const voices = (await readVoiceCatalogue(d.env.MODELS_DIR!)).length;
    const deadline = Date.now() + 60_000;
    while ((await d.prisma.voiceModel.count({ where: { slug: { not: null } } })) < voices && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    const catalogue = await d.prisma.voiceModel.findMany({ where: { slug: { not: null } }, orderBy: { id: "asc" } });
    assert.equal(catalogue.length, voices);
    const covers = new Set<string>();
    for (const row of catalogue) {
      const model = await waitForMedia(row.id);
      covers.add((await assertGeneratedCover(model)).toString("base64"));
    }
    assert.equal(covers.size, catalogue.length, "each voice draws its own cover");
  });

  it("an imported model gets its media; the stable route the import answered with redirects to the demo once rendered", async () => {
    const res = await post("voice-models", {
      metadata: JSON.stringify({ title: "Imported" }),
      modelFile: { path: join(d.env.MODELS_DIR!, "voices/native-ember.onnx") },
    });
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as any;
    assert.equal(new URL(created.demoUrl).pathname, `/api/kits/v1/voice-models/${created.id}/demo`);
    const model = await waitForMedia(created.id);
    await assertGeneratedCover(model);
    // PUBLIC_BASE_URL is not set in this deployment and the API listens on a random port.
    const stable = new URL(new URL(created.demoUrl).pathname, d.baseUrl);
    const redirect = await fetch(stable, { headers: { authorization: `Bearer ${d.key}` }, redirect: "manual" });
    assert.equal(redirect.status, 302);
    assert.match(redirect.headers.get("location") ?? "", new RegExp(`voice-models/${created.id}/demo\\.mp3`));
  });

  it("an uploaded cover is kept: the worker renders only the demo", async () => {
    const picture = join(dir, "cover.jpg");
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=96x96", "-frames:v", "1", picture]);
    const res = await post("voice-models", {
      metadata: JSON.stringify({ title: "With my picture" }),
      modelFile: { path: join(d.env.MODELS_DIR!, "voices/native-lumen.onnx") },
      image: { path: picture },
    });
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as any;
    const model = await waitForMedia(created.id);
    assert.match(model.imageUrl, new RegExp(`voice-models/${created.id}/cover\\.jpg`));
    assert.deepEqual(await assertMedia(model), await readFile(picture));
  });

  it("a blended model gets its media once the blend succeeds", async () => {
    const ids = await Promise.all(
      ["native-flint", "native-aria"].map(async (slug) => (await d.prisma.voiceModel.findUniqueOrThrow({ where: { slug } })).id),
    );
    const res = await fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify({ modelId1: ids[0], modelId2: ids[1], alpha: 0.5, title: "Blend" }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const job = (await res.json()) as any;
    const done = await waitForEnd(d, `voice-blender/${job.id}`, 120_000);
    assert.equal(done.status, "success", done.errorMessage);
    await assertGeneratedCover(await waitForMedia(job.outputModelId));
  });
});
