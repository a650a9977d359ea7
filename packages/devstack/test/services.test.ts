import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import net from "node:net";
import { describe, test } from "node:test";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import pg from "pg";
import { freePort, startPostgres, startRedis, startS3 } from "../src/index.ts";

/** Sends RESP commands over a raw socket and returns the raw reply (devstack has no Redis client). */
async function redisCommand(port: number, ...args: string[]): Promise<string> {
  const payload = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(payload));
    socket.once("data", (data) => {
      socket.end();
      resolve(data.toString("utf8"));
    });
    socket.once("error", reject);
  });
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

describe("freePort", () => {
  test("returns distinct bindable ports", async () => {
    const ports = await Promise.all([freePort(), freePort(), freePort()]);
    for (const port of ports) assert.ok(port > 1024 && port < 65536);
    assert.equal(new Set(ports).size, 3);
  });
});

describe("startPostgres", () => {
  test("runs PostgreSQL 18 with the database created, and removes its temp cluster on stop", async () => {
    const postgres = await startPostgres();
    try {
      assert.match(postgres.url, /^postgresql:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/mixdown$/);
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      const { rows } = await client.query<{ server_version_num: string; db: string }>(
        "SELECT current_setting('server_version_num') AS server_version_num, current_database() AS db",
      );
      await client.end();
      assert.ok(Number(rows[0]!.server_version_num) >= 180000);
      assert.equal(rows[0]!.db, "mixdown");
    } finally {
      await postgres.stop();
    }
    assert.equal(await isListening(postgres.port), false);
    assert.equal(existsSync(postgres.dataDir), false);
  });

  test("halt() takes the server away and resume() brings it back on the same port with its data, after a crash too", async () => {
    const postgres = await startPostgres();
    const query = async (sql: string) => {
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      try {
        return (await client.query<{ v: string }>(sql)).rows;
      } finally {
        await client.end();
      }
    };
    try {
      await query("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')");
      await postgres.halt();
      assert.equal(await isListening(postgres.port), false);
      await assert.rejects(query("SELECT 1"), /ECONNREFUSED/);
      await postgres.resume();
      // Test clusters commit asynchronously; this commit is flushed to the WAL before it returns.
      await query("SET synchronous_commit = on; INSERT INTO kept VALUES ('after a fast shutdown')");
      // An immediate shutdown skips the checkpoint: the next start recovers from the WAL.
      await postgres.halt({ crash: true });
      assert.equal(await isListening(postgres.port), false);
      await postgres.resume();
      assert.deepEqual(
        (await query("SELECT v FROM kept ORDER BY v")).map((r) => r.v),
        ["after a fast shutdown", "before"],
      );
    } finally {
      await postgres.stop();
    }
  });
});

describe("startRedis", () => {
  test("answers PING on 127.0.0.1 with noeviction, and stops", async () => {
    const redis = await startRedis();
    try {
      assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
      assert.equal(await redisCommand(redis.port, "PING"), "+PONG\r\n");
      assert.match(await redisCommand(redis.port, "CONFIG", "GET", "maxmemory-policy"), /noeviction/);
    } finally {
      await redis.stop();
    }
    assert.equal(await isListening(redis.port), false);
  });

  test("restart() brings it back on the same port, keeping data when append-only", async () => {
    const redis = await startRedis({ appendOnly: true });
    try {
      assert.equal(await redisCommand(redis.port, "SET", "k", "v"), "+OK\r\n");
      await redis.restart();
      assert.equal(await redisCommand(redis.port, "GET", "k"), "$1\r\nv\r\n");
    } finally {
      await redis.stop();
    }
  });

  test("two servers run side by side on different ports", async () => {
    const [a, b] = await Promise.all([startRedis(), startRedis()]);
    try {
      assert.notEqual(a.port, b.port);
      await redisCommand(a.port, "SET", "only", "a");
      assert.equal(await redisCommand(b.port, "GET", "only"), "$-1\r\n");
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe("startS3", () => {
  test("serves the created bucket to the AWS SDK with path-style addressing", async () => {
    const s3 = await startS3({ bucket: "devstack-test" });
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    try {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: "a/b.txt", Body: "hello" }));
      const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: "a/b.txt" }));
      assert.equal(await got.Body!.transformToString(), "hello");
      // The bucket exists already: creating it again is refused.
      await assert.rejects(client.send(new CreateBucketCommand({ Bucket: s3.bucket })));
    } finally {
      client.destroy();
      await s3.stop();
    }
  });

  test("halt() refuses connections and cuts open ones; resume() serves the same objects on the same port", async () => {
    const s3 = await startS3({ bucket: "devstack-test" });
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const read = async () =>
      (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: "kept.txt" }))).Body!.transformToString();
    try {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: "kept.txt", Body: "hello" }));
      await s3.halt();
      assert.equal(await isListening(Number(new URL(s3.endpoint).port)), false);
      await assert.rejects(read(), (error: { code?: string; name?: string }) =>
        ["ECONNREFUSED", "ECONNRESET"].includes(error.code ?? error.name ?? ""),
      );
      await s3.resume();
      assert.equal(await read(), "hello");
    } finally {
      client.destroy();
      await s3.stop();
    }
  });
});
