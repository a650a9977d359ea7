import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { startS3, type RunningS3 } from "@mixdown/devstack";
import { ObjectNotFoundError, RetryingStorage, StorageUnavailableError } from "../src/index.ts";
import { S3Storage } from "../src/s3.ts";

let s3: RunningS3;
let scratch: string;
let file: string;
before(async () => {
  s3 = await startS3({ bucket: "outage" });
  scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-storage-outage-"));
  file = path.join(scratch, "out.wav");
  await writeFile(file, "RIFF....WAVE");
});
after(async () => {
  await s3?.stop();
  await rm(scratch, { recursive: true, force: true });
});

const direct = () =>
  new S3Storage({
    bucket: s3.bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
  });

test("a stopped S3 server is a StorageUnavailableError naming the operation and key; a missing object is not", async () => {
  const storage = direct();
  try {
    await assert.rejects(storage.getStream("never/stored.wav"), ObjectNotFoundError);
    await s3.halt();
    await assert.rejects(storage.putFile("outputs/x/1/a.wav", file), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.match(
        error.message,
        /^object storage is unavailable: could not store outputs\/x\/1\/a\.wav: .*(ECONNREFUSED|ECONNRESET|socket hang up)/,
      );
      return true;
    });
    await assert.rejects(storage.stat("outputs/x/1/a.wav"), StorageUnavailableError);
  } finally {
    await s3.resume();
    await storage.close();
  }
});

test("RetryingStorage stores a file once the server is back, after waits that double", async () => {
  const retries: Array<{ attempt: number; delayMs: number }> = [];
  let resumed: Promise<void> | undefined;
  const storage = new RetryingStorage(direct(), {
    attempts: 10,
    delayMs: 100,
    onRetry: ({ attempt, delayMs }) => {
      retries.push({ attempt, delayMs });
      // Back during the third wait.
      if (attempt === 3) resumed = s3.resume();
    },
  });
  try {
    await s3.halt();
    assert.equal(await storage.putFile("outputs/x/2/a.wav", file), 12);
    await resumed;
    assert.deepEqual(retries, [
      { attempt: 1, delayMs: 100 },
      { attempt: 2, delayMs: 200 },
      { attempt: 3, delayMs: 400 },
    ]);
    assert.equal((await storage.stat("outputs/x/2/a.wav"))?.size, 12);
  } finally {
    await s3.resume();
    await storage.close();
  }
});

test("RetryingStorage gives up after its tries with an error that counts them, and does not retry a missing object", async () => {
  let waits = 0;
  const storage = new RetryingStorage(direct(), { attempts: 3, delayMs: 20, onRetry: () => void waits++ });
  try {
    await assert.rejects(storage.downloadToFile("never/stored.wav", path.join(scratch, "x")), ObjectNotFoundError);
    assert.equal(waits, 0);
    await s3.halt();
    await assert.rejects(storage.putFile("outputs/x/3/a.wav", file), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.equal(error.tries, 3);
      assert.match(error.message, /could not store outputs\/x\/3\/a\.wav \(3 tries\): .*ECONNREFUSED/);
      return true;
    });
    assert.equal(waits, 2);
  } finally {
    await s3.resume();
    await storage.close();
  }
});
