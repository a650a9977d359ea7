import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createJobTables, SeparationJobRepository } from "@mixdown/db";
import { makeSong, postForm, startDeployment, waitForEnd, type Deployment } from "../testing/harness.ts";
import { signatureValid, startReceiver } from "../testing/webhook-receiver.ts";

describe("webhooks through the API, the worker and a receiver", () => {
  let d: Deployment;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let secret: string;

  /**
   * The separation row's delivery once the worker has written its end (`deliveredAt` or `failedAt`):
   * the receiver answers before the worker records the answer, so a test that saw the POST arrive
   * waits for the row.
   */
  async function deliveryEnded(rowId: number, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const delivery = await d.prisma.webhookDelivery.findFirst({ where: { jobKind: "separation", rowId } });
      if (delivery && (delivery.deliveredAt || delivery.failedAt)) return delivery;
      if (Date.now() > deadline) throw new Error(`the delivery of separation ${rowId} did not end within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let song: string;

  before(async () => {
    receiver = await startReceiver();
    // 200 ms instead of 5 s between tries, so a retried delivery takes a second, not a minute.
    d = await startDeployment({ WORKER_QUEUES: "separation,webhook-delivery", WEBHOOK_RETRY_DELAY_MS: "200" });
    secret = (await d.prisma.apiKey.findFirstOrThrow({ where: { name: "e2e" } })).webhookSecret;
    song = await makeSong("song.wav", 3);
  });
  after(async () => {
    await d?.stop();
    await receiver?.close();
  });

  it("a separation that succeeds POSTs its record once, as JSON, signed with the key's secret, with job.success", async () => {
    const res = await postForm(d, "vocal-separations", { inputFile: { path: song }, webhookUrl: receiver.url("/hooks/success") });
    assert.equal(res.status, 200, await res.clone().text());
    const created = (await res.json()) as { id: number };
    const job = await waitForEnd(d, `vocal-separations/${created.id}`);
    assert.equal(job.status, "success");

    const [hook] = await receiver.waitFor("/hooks/success", 1);
    assert.equal(hook!.headers["content-type"], "application/json");
    assert.equal(hook!.headers["mixdown-event"], "job.success");
    assert.ok(
      signatureValid(secret, hook!.headers["mixdown-signature"] as string, hook!.body),
      "the signature verifies with the key's webhook secret",
    );
    assert.ok(
      !signatureValid(secret, hook!.headers["mixdown-signature"] as string, hook!.body.replace('"success"', '"error"')),
      "a tampered body does not verify",
    );
    assert.ok(
      !signatureValid(`${secret}x`, hook!.headers["mixdown-signature"] as string, hook!.body),
      "another secret does not verify",
    );

    const record = JSON.parse(hook!.body);
    // The record GET answers. Only the signed URLs' query strings may differ: each is signed when
    // its record is built, and a presigned URL carries the second it was signed in.
    const unsigned = (value: unknown): unknown =>
      typeof value === "string" && /^https?:\/\//.test(value)
        ? new URL(value).pathname
        : Array.isArray(value)
          ? value.map(unsigned)
          : value !== null && typeof value === "object"
            ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unsigned(v)]))
            : value;
    assert.deepEqual(unsigned(record), unsigned(job));
    assert.equal((await fetch(record.vocalAudioFileUrl)).status, 200, "the record's URLs download");

    const delivery = await deliveryEnded(created.id);
    assert.equal(hook!.headers["mixdown-delivery"], String(delivery.id));
    assert.equal(delivery.attempts, 1);
    assert.ok(delivery.deliveredAt);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(receiver.at("/hooks/success").length, 1, "delivered once");
  });

  it("a receiver answering 500 twice is retried with backoff and then delivered, with the same delivery id", async () => {
    receiver.answers.set("/hooks/flaky", [500, 503]);
    const res = await postForm(d, "stem-splits", { inputFile: { path: song }, webhookUrl: receiver.url("/hooks/flaky") });
    assert.equal(res.status, 200, await res.clone().text());
    const created = (await res.json()) as { id: number };
    const hooks = await receiver.waitFor("/hooks/flaky", 3);
    assert.deepEqual(new Set(hooks.map((h) => h.headers["mixdown-delivery"])).size, 1);
    for (const h of hooks) assert.ok(signatureValid(secret, h.headers["mixdown-signature"] as string, h.body));
    const delivery = await deliveryEnded(created.id);
    assert.ok(delivery.deliveredAt, "delivered on the third try");
    assert.equal(delivery.attempts, 3);
    assert.equal(JSON.parse(hooks[2]!.body).status, "success");
  });

  it("a 404 answer is final: not retried, the delivery is marked failed with the status", async () => {
    receiver.answers.set("/hooks/gone", [404, 404, 404]);
    const res = await postForm(d, "vocal-separations", { inputFile: { path: song }, webhookUrl: receiver.url("/hooks/gone") });
    const created = (await res.json()) as { id: number };
    await receiver.waitFor("/hooks/gone", 1);
    const delivery = await deliveryEnded(created.id);
    assert.ok(delivery.failedAt);
    assert.equal(delivery.lastStatusCode, 404);
    assert.equal(delivery.deliveredAt, null);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(receiver.at("/hooks/gone").length, 1);
  });

  it("rows ended outside the worker (an error, a cancel) with nobody queueing their webhook are delivered by the reconciler: job.error, job.cancelled", async () => {
    const key = await d.prisma.apiKey.findFirstOrThrow({ where: { name: "e2e" } });
    const repo = new SeparationJobRepository(d.prisma);
    const rows = await Promise.all(
      ["/hooks/error", "/hooks/cancelled"].map((path) =>
        repo.create({
          callerId: key.callerId,
          apiKeyId: key.id,
          kind: "stem_split",
          inputKey: "uploads/none.wav",
          inputFormat: "wav",
          webhookUrl: receiver.url(path),
        }),
      ),
    );
    // Tables without an `onWebhookOwed` listener: as if the process died right after the commit.
    const tables = createJobTables(d.prisma);
    assert.equal(await tables.separation.fail(rows[0]!.id, "the input vanished"), true);
    assert.equal(await tables.separation.cancel(rows[1]!.id), true);
    assert.equal(await tables.separation.cancel(rows[1]!.id), false, "a second end changes nothing and owes nothing");
    assert.equal(
      await d.prisma.webhookDelivery.count({ where: { jobKind: "separation", rowId: { in: rows.map((r) => r.id) } } }),
      2,
    );

    const [error] = await receiver.waitFor("/hooks/error", 1, 30_000);
    const [cancelled] = await receiver.waitFor("/hooks/cancelled", 1, 30_000);
    assert.equal(error!.headers["mixdown-event"], "job.error");
    assert.equal(JSON.parse(error!.body).errorMessage, "the input vanished");
    assert.equal(cancelled!.headers["mixdown-event"], "job.cancelled");
    assert.equal(JSON.parse(cancelled!.body).status, "cancelled");
    assert.ok(signatureValid(secret, cancelled!.headers["mixdown-signature"] as string, cancelled!.body));
  });

  it("invalid webhook URLs are a 422 naming webhookUrl, with nothing stored", async () => {
    const before = await d.prisma.separationJob.count();
    const bad = [
      "not a url",
      "ftp://example.com/hook",
      "http://user:pw@example.com/hook",
      `https://example.com/${"a".repeat(2100)}`,
      "/relative/hook",
    ];
    for (const webhookUrl of bad) {
      const res = await postForm(d, "vocal-separations", { inputFile: { path: song }, webhookUrl });
      assert.equal(res.status, 422, webhookUrl);
      const body = (await res.json()) as { statusCode: number; message: string };
      assert.equal(body.statusCode, 422);
      assert.match(body.message, /webhookUrl/);
    }
    const blend = await fetch(`${d.baseUrl}/api/kits/v1/voice-blender`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.key}`, "content-type": "application/json" },
      body: JSON.stringify({ modelId1: 1, modelId2: 2, alpha: 0.5, webhookUrl: "ftp://example.com/hook" }),
    });
    assert.equal(blend.status, 422);
    assert.match(((await blend.json()) as { message: string }).message, /webhookUrl/);
    assert.equal(await d.prisma.separationJob.count(), before);
    assert.equal(await d.prisma.voiceBlendJob.count(), 0);
  });

  it("the OpenAPI document offers webhookUrl on every job create", async () => {
    const doc = (await (await fetch(`${d.baseUrl}/docs/json`)).json()) as any;
    for (const path of [
      "/api/kits/v1/vocal-separations",
      "/api/kits/v1/stem-splits",
      "/api/kits/v1/voice-conversions",
      "/api/kits/v1/tts",
    ]) {
      const schema = doc.paths[path].post.requestBody.content["multipart/form-data"].schema;
      assert.ok(schema.properties.webhookUrl, `${path} documents webhookUrl`);
    }
    assert.ok(doc.paths["/api/kits/v1/voice-blender"].post.requestBody.content["application/json"].schema.properties.webhookUrl);
  });
});
