// `minio server DIR [--address :9000] [--console-address ...]` served by s3rver.
"use strict";
const path = require("node:path");
const globalModules = path.join(path.dirname(process.execPath), "..", "lib", "node_modules");
const S3rver = require(path.join(globalModules, "s3rver"));
const AWSAccount = require(path.join(globalModules, "s3rver", "lib", "models", "account"));

const args = process.argv.slice(2);
if (args[0] !== "server" || !args[1]) {
  console.error("usage: minio server DIR [--address :PORT] [--console-address ADDR] (s3rver stand-in)");
  process.exit(2);
}
const directory = args[1];
const addressAt = args.indexOf("--address");
const port = addressAt > 0 ? Number(args[addressAt + 1].split(":").pop()) : 9000;
const user = process.env.MINIO_ROOT_USER || "minioadmin";
const password = process.env.MINIO_ROOT_PASSWORD || "minioadmin";
new AWSAccount(123456789012, user).createKeyPair(user, password);

// Path-style only: s3rver would otherwise read a host name such as `minio` as a bucket (virtual hosts).
const server = new S3rver({ address: "0.0.0.0", port, directory, silent: true, vhostBuckets: false });
server.run().then(
  () => {
    // Node's server drops an idle keep-alive connection after 5 s; a client that sends on it just
    // then gets "socket hang up", which an SDK cannot retry for a streamed body. MinIO (a Go server)
    // keeps idle connections far longer: so does the stand-in, so that it fails no more than MinIO.
    server.httpServer.keepAliveTimeout = 75_000;
    server.httpServer.headersTimeout = 80_000;
    console.log(`minio stand-in (s3rver): S3 API on :${port}, data in ${directory}`);
  },
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
const stop = () => server.close().finally(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
