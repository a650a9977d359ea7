import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { MAX_PRESIGN_SECONDS, SignedUrlCache, type SignRequest } from "../src/index.ts";
import { S3Storage } from "../src/s3.ts";

function clockAt(seconds: number) {
  const clock = { now: seconds * 1000 };
  return { clock, now: () => clock.now };
}

describe("SignedUrlCache", () => {
  test("signs once per slice, with an expiry that covers the TTL from any moment of the slice", async () => {
    const { clock, now } = clockAt(1_000_000_020 + 7); // 7 s into a 60 s slice (1_000_000_020 is a multiple of 60)
    const signed: SignRequest[] = [];
    const cache = new SignedUrlCache((r) => (signed.push(r), `u/${r.key}/${r.issuedAt}/${r.expiresIn}`), Infinity, 100, now);
    assert.equal(await cache.get("a", 3600), "u/a/1000000020/3660");
    clock.now += 52_000; // 59 s into the slice
    assert.equal(await cache.get("a", 3600), "u/a/1000000020/3660");
    assert.equal(signed.length, 1);
    clock.now += 1_000; // the next slice
    assert.equal(await cache.get("a", 3600), "u/a/1000000080/3660");
    assert.equal(signed.length, 2);
    // Small TTLs get small slices (a tenth, at least 1 s).
    assert.equal(SignedUrlCache.sliceSeconds(30), 3);
    assert.equal(SignedUrlCache.sliceSeconds(5), 1);
    assert.equal(SignedUrlCache.sliceSeconds(86_400), 60);
  });

  test("never asks for more than the backend's maximum, keys and TTLs are separate, a failure is not kept", async () => {
    const { now } = clockAt(2_000_000_000);
    let fail = true;
    const cache = new SignedUrlCache(
      (r) => {
        if (fail) throw new Error("no credentials");
        return `${r.key} ${r.expiresIn}`;
      },
      MAX_PRESIGN_SECONDS,
      100,
      now,
    );
    await assert.rejects(cache.get("a", 60), /no credentials/);
    fail = false;
    assert.equal(await cache.get("a", 60), "a 66");
    assert.equal(await cache.get("b", 60), "b 66");
    assert.equal(await cache.get("a", 120), "a 132");
    assert.equal(await cache.get("a", MAX_PRESIGN_SECONDS), `a ${MAX_PRESIGN_SECONDS}`);
  });

  test("holds at most maxEntries URLs, dropping the least recently signed", async () => {
    const { now } = clockAt(3_000_000_000);
    let count = 0;
    const cache = new SignedUrlCache((r) => `${r.key}#${++count}`, Infinity, 3, now);
    for (const k of ["a", "b", "c", "d"]) await cache.get(k, 60);
    assert.equal(await cache.get("d", 60), "d#4");
    assert.equal(await cache.get("b", 60), "b#2");
    assert.equal(await cache.get("a", 60), "a#5"); // "a" was dropped
  });

  test("S3Storage hands out exactly the AWS SDK's presigned URL for the slice's start", async () => {
    const options = {
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:9",
      forcePathStyle: true,
      accessKeyId: "AK",
      secretAccessKey: "SK",
    };
    const storage = new S3Storage({ bucket: "songs", ...options });
    const client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    try {
      const key = "outputs/vocal-separation/7/lead vocals (ünïcode).wav";
      const url = await storage.signedUrl(key, 3600);
      const issuedAt = Math.floor(Date.now() / 1000 / 60) * 60;
      const expected = await getSignedUrl(client, new GetObjectCommand({ Bucket: "songs", Key: key }), {
        expiresIn: 3660,
        signingDate: new Date(issuedAt * 1000),
      });
      assert.equal(url, expected);
    } finally {
      await storage.close();
      client.destroy();
    }
  });
});
