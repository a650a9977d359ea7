import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, loadConfig, loadDatabaseConfig, publicBaseUrl } from "../src/index.ts";

const minimal = { DATABASE_URL: "postgresql://u:p@127.0.0.1:5432/db", SIGNED_URL_SECRET: "0123456789abcdef" };

test("fills every default from a minimal environment", () => {
  const config = loadConfig(minimal);
  assert.equal(config.PORT, 8080);
  assert.equal(config.STORAGE_DRIVER, "local");
  assert.equal(config.AUTO_MIGRATE, true);
  assert.equal(publicBaseUrl(config), "http://127.0.0.1:8080");
});

test("reads a separation model setting as its list of names, and refuses an empty or repeated one", () => {
  const config = loadConfig({ ...minimal, SEPARATION_MODEL_VOCALS: " vocals , stems" });
  assert.deepEqual(config.SEPARATION_MODEL_VOCALS, ["vocals", "stems"]);
  assert.deepEqual(config.SEPARATION_MODEL_STEMS, ["stems"], "the default, one model");
  assert.throws(
    () => loadConfig({ ...minimal, SEPARATION_MODEL_STEMS: "six,,stems" }),
    /SEPARATION_MODEL_STEMS: "six,,stems" has an empty model name/s,
  );
  assert.throws(
    () => loadConfig({ ...minimal, SEPARATION_MODEL_STEMS: "six,six" }),
    /SEPARATION_MODEL_STEMS.*names "six" twice: an ensemble's models must differ/s,
  );
});

test("names every bad setting at once", () => {
  assert.throws(
    () => loadConfig({ PORT: "http", LOSSY_BITRATE_KBPS: "8" }),
    (error: Error) => {
      assert.ok(error instanceof ConfigError);
      for (const key of ["DATABASE_URL", "PORT", "LOSSY_BITRATE_KBPS"]) assert.match(error.message, new RegExp(key));
      return true;
    },
  );
});

test("requires both S3 credentials when STORAGE_DRIVER=s3", () => {
  assert.throws(
    () => loadConfig({ ...minimal, STORAGE_DRIVER: "s3" }),
    (error: Error) => {
      assert.match(error.message, /S3_ACCESS_KEY_ID/);
      assert.match(error.message, /S3_SECRET_ACCESS_KEY/);
      return true;
    },
  );
});

test("requires SIGNED_URL_SECRET for local storage only", () => {
  assert.throws(() => loadConfig({ DATABASE_URL: minimal.DATABASE_URL }), /SIGNED_URL_SECRET/);
  const s3 = loadConfig({
    DATABASE_URL: minimal.DATABASE_URL,
    STORAGE_DRIVER: "s3",
    S3_ACCESS_KEY_ID: "a",
    S3_SECRET_ACCESS_KEY: "b",
  });
  assert.equal(s3.SIGNED_URL_SECRET, undefined);
});

test("loadDatabaseConfig needs only DATABASE_URL", () => {
  assert.deepEqual(loadDatabaseConfig({ DATABASE_URL: minimal.DATABASE_URL, PORT: "not a port" }), {
    DATABASE_URL: minimal.DATABASE_URL,
  });
  assert.throws(() => loadDatabaseConfig({}), ConfigError);
});

test("refuses a headers timeout longer than the whole request's, naming both settings", () => {
  assert.deepEqual(
    [loadConfig(minimal).HTTP_HEADERS_TIMEOUT_SECONDS, loadConfig(minimal).HTTP_REQUEST_TIMEOUT_SECONDS],
    [10, 600],
  );
  assert.throws(
    () => loadConfig({ ...minimal, HTTP_HEADERS_TIMEOUT_SECONDS: "60", HTTP_REQUEST_TIMEOUT_SECONDS: "30" }),
    /HTTP_HEADERS_TIMEOUT_SECONDS: must not exceed HTTP_REQUEST_TIMEOUT_SECONDS \(30\)/,
  );
});
