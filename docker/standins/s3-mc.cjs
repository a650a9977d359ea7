// The `mc` commands docker-compose.yml runs, against the s3rver stand-in:
//   mc alias set NAME URL ACCESS_KEY SECRET_KEY
//   mc mb [--ignore-existing] NAME/BUCKET
//   mc ready NAME            (NAME `local` is http://127.0.0.1:9000 unless set)
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const configFile = path.join(os.homedir(), ".mc-standin.json");
const readAliases = () => {
  try {
    return JSON.parse(fs.readFileSync(configFile, "utf8"));
  } catch {
    return {};
  }
};
const alias = (name) =>
  readAliases()[name] ?? (name === "local" ? { url: "http://127.0.0.1:9000", accessKey: "", secretKey: "" } : null);

const hmac = (key, data) => crypto.createHmac("sha256", key).update(data).digest();
const sha256 = (data) => crypto.createHash("sha256").update(data).digest("hex");

// One AWS Signature V4 signed request (region us-east-1, path-style, empty body).
async function s3Request(target, method, objectPath) {
  const url = new URL(objectPath, target.url);
  const now = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "");
  const date = now.slice(0, 8);
  const payloadHash = sha256("");
  const headers = { host: url.host, "x-amz-content-sha256": payloadHash, "x-amz-date": now };
  const signed = Object.keys(headers).sort();
  const canonical = [
    method,
    url.pathname,
    "",
    ...signed.map((h) => `${h}:${headers[h]}`),
    "",
    signed.join(";"),
    payloadHash,
  ].join("\n");
  const scope = `${date}/us-east-1/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", now, scope, sha256(canonical)].join("\n");
  let key = hmac(`AWS4${target.secretKey}`, date);
  for (const part of ["us-east-1", "s3", "aws4_request"]) key = hmac(key, part);
  const signature = crypto.createHmac("sha256", key).update(toSign).digest("hex");
  const authorization = `AWS4-HMAC-SHA256 Credential=${target.accessKey}/${scope}, SignedHeaders=${signed.join(";")}, Signature=${signature}`;
  const { host, ...sent } = headers;
  // As the real mc does (minio-go retries a request that met a network error up to 10 times, the
  // waits growing from 1 s): a freshly created compose network may not resolve or route the
  // server's name for a moment after its health check passed (seen after `compose down` + `up`).
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { method, headers: { ...sent, authorization } });
    } catch (err) {
      if (attempt >= 10) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * attempt, 5000)));
    }
  }
}

async function main(args) {
  const [command, ...rest] = args;
  if (command === "alias" && rest[0] === "set" && rest.length === 5) {
    const [, name, url, accessKey, secretKey] = rest;
    fs.writeFileSync(configFile, JSON.stringify({ ...readAliases(), [name]: { url, accessKey, secretKey } }));
    console.log(`Added \`${name}\` successfully.`);
    return 0;
  }
  if (command === "ready" && rest.length === 1) {
    const target = alias(rest[0]);
    if (!target) throw new Error(`no alias ${rest[0]}`);
    await fetch(target.url);
    console.log(`The cluster '${rest[0]}' is ready`);
    return 0;
  }
  if (command === "mb") {
    const ignoreExisting = rest.includes("--ignore-existing") || rest.includes("-p");
    const spec = rest.find((a) => !a.startsWith("-"));
    const [name, bucket] = (spec ?? "").split("/");
    const target = alias(name);
    if (!target || !bucket) throw new Error(`usage: mc mb [--ignore-existing] ALIAS/BUCKET`);
    const head = await s3Request(target, "HEAD", `/${bucket}`);
    if (head.ok) {
      if (ignoreExisting) {
        console.log(`Bucket \`${spec}\` already exists.`);
        return 0;
      }
      throw new Error(`Bucket ${spec} already exists`);
    }
    const put = await s3Request(target, "PUT", `/${bucket}`);
    if (!put.ok) throw new Error(`creating ${spec}: ${put.status} ${await put.text()}`);
    console.log(`Bucket created successfully \`${spec}\`.`);
    return 0;
  }
  throw new Error(`mc stand-in: unsupported command: ${args.join(" ")}`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`mc: ${error.message}`);
    process.exit(1);
  },
);
