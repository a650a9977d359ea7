import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import {
  deliverWebhook,
  guardedLookup,
  outboundUrlProblem,
  signatureHeader,
  verifySignature,
  WebhookAddressPolicy,
  WebhookRefused,
  webhookUrlProblem,
} from "../src/index.ts";

const any = new WebhookAddressPolicy([]);
const noPrivate = new WebhookAddressPolicy(["private"]);

test("the default policy allows every address; `private` denies loopback, RFC 1918, link-local (metadata), ULA and IPv4-mapped forms", () => {
  for (const a of ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1"]) assert.equal(any.allows(a), true, a);
  for (const a of [
    "127.0.0.1",
    "10.1.2.3",
    "172.20.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "::1",
    "fd12::1",
    "fe80::1",
    "::ffff:10.0.0.1",
  ]) {
    assert.equal(noPrivate.allows(a), false, a);
  }
  for (const a of ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]) assert.equal(noPrivate.allows(a), true, a);
  const cidr = new WebhookAddressPolicy(["203.0.113.0/24"]);
  assert.equal(cidr.allows("203.0.113.9"), false);
  assert.equal(cidr.allows("10.0.0.1"), true);
});

test("a webhook URL must be absolute http(s), without credentials, at most 2048 characters, and not a denied literal address", () => {
  assert.equal(webhookUrlProblem("https://example.com/hook?x=1", any), null);
  assert.equal(webhookUrlProblem("http://127.0.0.1:9000/hook", any), null);
  assert.match(webhookUrlProblem("mailto:a@b.c", any)!, /http or https/);
  assert.match(webhookUrlProblem("example.com/hook", any)!, /absolute/);
  assert.match(webhookUrlProblem("https://u:p@example.com/", any)!, /credentials/);
  assert.match(webhookUrlProblem(`https://example.com/${"x".repeat(2048)}`, any)!, /2048/);
  assert.match(webhookUrlProblem("http://127.0.0.1:9000/hook", noPrivate)!, /WEBHOOK_DENIED_NETWORKS/);
  assert.match(webhookUrlProblem("http://[::1]/hook", noPrivate)!, /WEBHOOK_DENIED_NETWORKS/);
});

test("other outbound URLs (a voice model's modelUrl) follow the same rules, named by their field; the guarded lookup refuses with the caller's error", async () => {
  const why = { credentials: "put tokens elsewhere", denied: "this service does not download from" };
  assert.equal(outboundUrlProblem("modelUrl", "https://huggingface.co/a/b/resolve/main/m.pth", noPrivate, why), null);
  assert.equal(outboundUrlProblem("modelUrl", "file:///etc/passwd", any, why), "modelUrl must use http or https, not file");
  assert.equal(
    outboundUrlProblem("modelUrl", "https://u:p@example.com/m.pth", any, why),
    "modelUrl must not contain credentials (user:password@); put tokens elsewhere",
  );
  assert.equal(
    outboundUrlProblem("modelUrl", "http://169.254.169.254/latest", noPrivate, why),
    "modelUrl points to 169.254.169.254, in a network this service does not download from (WEBHOOK_DENIED_NETWORKS)",
  );
  class Refused extends Error {}
  const lookup = guardedLookup(noPrivate, (message) => new Refused(message));
  const err = await new Promise<Error | null>((resolve) => lookup("localhost", { all: true }, (e) => resolve(e)));
  assert.ok(err instanceof Refused);
  assert.match(err.message, /^localhost resolves to (127\.0\.0\.1|::1), in a denied network \(WEBHOOK_DENIED_NETWORKS\)$/);
});

test("a signature verifies for its body and secret only, and not once too old", () => {
  const header = signatureHeader("whsec_abc", '{"id":1}');
  assert.equal(verifySignature("whsec_abc", '{"id":1}', header), true);
  assert.equal(verifySignature("whsec_abc", '{"id":2}', header), false);
  assert.equal(verifySignature("whsec_abd", '{"id":1}', header), false);
  const old = signatureHeader("whsec_abc", "{}", new Date(Date.now() - 600_000));
  assert.equal(verifySignature("whsec_abc", "{}", old), false);
});

test("with `private` denied, a host name resolving to loopback is refused on the address it connects to, and nothing reaches the receiver", async () => {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  try {
    const req = { body: "{}", secret: "s", event: "job.success", deliveryId: 1, timeoutMs: 2000 };
    await assert.rejects(deliverWebhook({ ...req, url: `http://localhost:${port}/`, policy: noPrivate }), WebhookRefused);
    await assert.rejects(deliverWebhook({ ...req, url: `http://127.0.0.1:${port}/`, policy: noPrivate }), WebhookRefused);
    assert.equal(hits, 0);
    assert.deepEqual(await deliverWebhook({ ...req, url: `http://localhost:${port}/`, policy: any }), { statusCode: 200 });
    assert.equal(hits, 1);
  } finally {
    server.close();
  }
});
