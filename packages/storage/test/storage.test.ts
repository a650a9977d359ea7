import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { loadConfig } from "@mixdown/config";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import {
  createStorage,
  LocalDiskStorage,
  ObjectNotFoundError,
  signFileKey,
  verifyFileSignature,
  type ObjectStorage,
} from "../src/index.ts";

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

let stack: TestStack;
let scratch: string;
before(async () => {
  stack = await startTestStack({ storage: "s3" });
  scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-storage-test-"));
});
after(async () => {
  await stack?.stop();
  await rm(scratch, { recursive: true, force: true });
});

for (const driver of ["s3", "local"] as const) {
  describe(`${driver} storage`, () => {
    let storage: ObjectStorage;
    before(() => {
      storage = createStorage(loadConfig({ ...stack.env, STORAGE_DRIVER: driver }));
    });
    after(() => storage.close());

    test("stores a stream of unknown length (multipart-sized) and reads it back", async () => {
      const big = Buffer.alloc(11 * 1024 * 1024 + 123, 7);
      function* chunks() {
        for (let i = 0; i < big.length; i += 65536) yield big.subarray(i, i + 65536);
      }
      const written = await storage.putStream("t/stream/big.bin", Readable.from(chunks()));
      assert.equal(written, big.length);
      assert.deepEqual((await storage.stat("t/stream/big.bin"))?.size, big.length);
      const back = await readAll(await storage.getStream("t/stream/big.bin"));
      assert.ok(back.equals(big));
    });

    test("puts a file, downloads it to a file, lists, deletes and deletes by prefix", async () => {
      const src = path.join(scratch, `${driver}-src.wav`);
      await writeFile(src, "RIFF....WAVE");
      assert.equal(await storage.putFile("t/files/a.wav", src), 12);
      await storage.putFile("t/files/b.wav", src);
      await storage.putFile("t/other/c.wav", src);
      assert.equal((await storage.stat("t/files/a.wav"))?.contentType, "audio/wav");
      const dest = path.join(scratch, `${driver}-dest.wav`);
      await storage.downloadToFile("t/files/a.wav", dest);
      assert.equal(await readFile(dest, "utf8"), "RIFF....WAVE");
      assert.deepEqual(await storage.list("t/files/"), ["t/files/a.wav", "t/files/b.wav"]);
      await storage.delete("t/files/a.wav");
      await storage.delete("t/files/never-existed.wav");
      assert.equal(await storage.exists("t/files/a.wav"), false);
      assert.equal(await storage.deletePrefix("t/files/"), 1);
      assert.deepEqual(await storage.list("t/files/"), []);
      assert.equal(await storage.exists("t/other/c.wav"), true);
    });

    test("deletes many keys at once, more than one request's 1,000, absent ones included, and nothing else", async () => {
      const keys = Array.from({ length: 1_203 }, (_, i) => `t/many/${String(i).padStart(4, "0")}.txt`);
      for (let i = 0; i < keys.length; i += 50)
        await Promise.all(keys.slice(i, i + 50).map((key) => storage.putStream(key, Readable.from([Buffer.from(key)]))));
      await storage.putStream("t/many-kept/x.txt", Readable.from([Buffer.from("x")]));
      await storage.deleteMany([...keys.slice(0, 1_200), "t/many/never-existed.txt"]);
      assert.deepEqual(await storage.list("t/many/"), keys.slice(1_200));
      await storage.deleteMany(keys);
      await storage.deleteMany([]);
      assert.deepEqual(await storage.list("t/many/"), []);
      assert.equal(await storage.exists("t/many-kept/x.txt"), true);
      await assert.rejects(storage.deleteMany(["t/ok.txt", "../escape"]), /invalid storage key/);
    });

    test("puts a multi-megabyte file in one streamed request, byte for byte", async () => {
      const src = path.join(scratch, `${driver}-big.bin`);
      const bytes = Buffer.alloc(7 * 1024 * 1024 + 17);
      for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i / 4096) % 251;
      await writeFile(src, bytes);
      assert.equal(await storage.putFile("t/big/file.bin", src), bytes.length);
      assert.ok((await readAll(await storage.getStream("t/big/file.bin"))).equals(bytes));
    });

    test("reading a missing key rejects with ObjectNotFoundError", async () => {
      await assert.rejects(storage.getStream("t/missing.wav"), ObjectNotFoundError);
      assert.equal(await storage.stat("t/missing.wav"), null);
    });

    test("refuses keys that could escape the store", async () => {
      for (const key of ["../x", "/abs", "a//b", "a/./b", ""]) {
        await assert.rejects(storage.putStream(key, Readable.from([Buffer.from("x")])), /invalid storage key/);
      }
    });

    test("signed URLs can be fetched without other credentials", async () => {
      await storage.putStream("t/signed/hello.wav", Readable.from([Buffer.from("hello")]));
      const url = await storage.signedUrl("t/signed/hello.wav", 60);
      if (driver === "s3") {
        const res = await fetch(url);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), "hello");
      } else {
        const u = new URL(url);
        assert.match(u.pathname, /^\/files\/t\/signed\/hello\.wav$/);
        const check = verifyFileSignature(
          stack.env.SIGNED_URL_SECRET!,
          "t/signed/hello.wav",
          u.searchParams.get("expires"),
          u.searchParams.get("signature"),
        );
        assert.equal(check, "ok");
      }
    });

    test("a signed URL is reused within its time slice and lives at least the TTL from when it is handed out", async () => {
      const key = "t/signed/reused.wav";
      await storage.putStream(key, Readable.from([Buffer.from("again")]));
      const ttl = 600; // slices of 60 s
      const before = Date.now() / 1000;
      const [a, b] = [await storage.signedUrl(key, ttl), await storage.signedUrl(key, ttl)];
      const sameSlice = Math.floor(before / 60) === Math.floor(Date.now() / 1000 / 60);
      if (sameSlice) assert.equal(a, b);
      const u = new URL(b);
      const expiresAt =
        driver === "s3"
          ? Date.parse(
              u.searchParams.get("X-Amz-Date")!.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"),
            ) /
              1000 +
            Number(u.searchParams.get("X-Amz-Expires"))
          : Number(u.searchParams.get("expires"));
      assert.ok(expiresAt >= Math.floor(Date.now() / 1000) + ttl, `expires ${expiresAt}, now ${Date.now() / 1000}`);
      assert.ok(expiresAt <= before + ttl + 61);
      if (driver === "s3") {
        const res = await fetch(b);
        assert.equal(await res.text(), "again");
      }
      // Another TTL is another URL.
      assert.notEqual(await storage.signedUrl(key, 900), b);
    });

    test("ping succeeds against a reachable backend", async () => {
      await storage.ping();
    });
  });
}

test("local storage removes a deleted folder prefix's folder, and never a shared one above it", async () => {
  const dir = path.join(scratch, "local-folders");
  const storage = new LocalDiskStorage({
    rootDir: dir,
    signingSecret: "0123456789abcdef0123456789abcdef",
    publicBaseUrl: "http://x",
  });
  await storage.putStream("outputs/stem-split/7/a.wav", Readable.from([Buffer.from("a")]));
  await storage.putStream("outputs/stem-split/7/sub/b.wav", Readable.from([Buffer.from("b")]));
  await storage.putStream("outputs/stem-split/70/c.wav", Readable.from([Buffer.from("c")]));
  assert.equal(await storage.deletePrefix("outputs/stem-split/7/"), 2);
  await assert.rejects(stat(path.join(dir, "outputs/stem-split/7")), { code: "ENOENT" });
  assert.ok((await stat(path.join(dir, "outputs/stem-split"))).isDirectory());
  assert.deepEqual(await storage.list("outputs/stem-split/"), ["outputs/stem-split/70/c.wav"]);
});

test("local storage links a final file into place on its own filesystem, and copies it from another or when not final", async () => {
  const storage = createStorage(loadConfig({ ...stack.env, STORAGE_DRIVER: "local" }));
  assert.ok(storage instanceof LocalDiskStorage);
  const inode = async (file: string) => (await stat(file)).ino;
  const src = path.join(scratch, "final.wav");
  await writeFile(src, "RIFF..final.");
  // same filesystem: the job's file becomes the object, no bytes copied; it outlives the job's copy
  assert.equal(await storage.putFile("t/final/a.wav", src, { final: true }), 12);
  assert.equal(await inode(storage.pathFor("t/final/a.wav")), await inode(src));
  // not final: a copy of its own
  await storage.putFile("t/final/b.wav", src);
  assert.notEqual(await inode(storage.pathFor("t/final/b.wav")), await inode(src));
  await rm(src);
  assert.equal((await readAll(await storage.getStream("t/final/a.wav"))).toString(), "RIFF..final.");
  // another filesystem (tmpfs), where link(2) answers EXDEV: copied
  if ((await statfs("/dev/shm").catch(() => undefined))?.type !== (await statfs(storage.rootDir)).type) {
    const other = await mkdtemp("/dev/shm/mixdown-storage-test-");
    try {
      await writeFile(path.join(other, "x.wav"), "RIFF..other.");
      assert.equal(await storage.putFile("t/final/c.wav", path.join(other, "x.wav"), { final: true }), 12);
      assert.equal((await readAll(await storage.getStream("t/final/c.wav"))).toString(), "RIFF..other.");
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  }
  await storage.deletePrefix("t/final/");
  await storage.close();
});

test("S3 storage loads the AWS SDK on its first call, not when it is created", async () => {
  const child = fileURLToPath(new URL("./support/lazy-sdk-child.ts", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", child], {
    env: { ...process.env, ...stack.env },
    cwd: fileURLToPath(new URL("..", import.meta.url)),
  });
  const { created, used } = JSON.parse(stdout.trim().split("\n").at(-1)!) as { created: string[]; used: string[] };
  assert.deepEqual(created, []);
  assert.ok(used.includes("@aws-sdk/client-s3"), used.join(", "));
});

test("an S3 backend pointing at a missing bucket fails ping", async () => {
  const storage = createStorage(loadConfig({ ...stack.env, STORAGE_DRIVER: "s3", S3_BUCKET: "no-such-bucket" }));
  await assert.rejects(storage.ping());
  await storage.close();
});

test("local signatures: tampered key or signature is invalid, past expiry is expired", () => {
  const secret = "0123456789abcdef0123";
  const now = 1_800_000_000;
  const sig = signFileKey(secret, "a/b.wav", now + 10);
  assert.equal(verifyFileSignature(secret, "a/b.wav", String(now + 10), sig, now), "ok");
  assert.equal(verifyFileSignature(secret, "a/c.wav", String(now + 10), sig, now), "invalid");
  assert.equal(verifyFileSignature(secret, "a/b.wav", String(now + 11), sig, now), "invalid");
  assert.equal(
    verifyFileSignature(
      secret,
      "a/b.wav",
      String(now + 10),
      sig.replace(/.$/, (c) => (c === "0" ? "1" : "0")),
      now,
    ),
    "invalid",
  );
  assert.equal(verifyFileSignature(secret, "a/b.wav", String(now + 10), sig, now + 11), "expired");
  assert.equal(verifyFileSignature(secret, "a/b.wav", undefined, sig, now), "invalid");
});
