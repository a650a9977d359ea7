import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { UploadQueue } from "../src/upload-queue.ts";

/** An upload that takes `ms` and records when each file started and ended. */
function recordingUpload(log: string[], ms = 5, fails?: string) {
  return async (file: string) => {
    log.push(`start ${file}`);
    await sleep(ms);
    log.push(`end ${file}`);
    if (file === fails) throw new Error(`${file} could not be stored`);
    return `key/${file}`;
  };
}

describe("UploadQueue", () => {
  it("uploads one file at a time, in the order they were added, each once, while the job goes on", async () => {
    const log: string[] = [];
    const uploads = new UploadQueue(recordingUpload(log), new AbortController().signal);
    uploads.add("vocals");
    uploads.add("backing");
    uploads.add("vocals");
    log.push("the job goes on");
    await uploads.finished();
    assert.deepEqual(log, ["the job goes on", "start vocals", "end vocals", "start backing", "end backing"]);
    assert.equal(uploads.uploaded("backing"), "key/backing");
    assert.equal(uploads.files, 2);
    assert.ok(uploads.uploadMs >= 8, "the two uploads' time, summed");
  });

  it("stops the uploads queued after a failed one, and finished() throws its failure", async () => {
    const log: string[] = [];
    const uploads = new UploadQueue(recordingUpload(log, 1, "vocals"), new AbortController().signal);
    for (const file of ["vocals", "backing"]) uploads.add(file);
    await assert.rejects(uploads.finished(), /vocals could not be stored/);
    assert.deepEqual(log, ["start vocals", "end vocals"]);
    assert.throws(() => uploads.uploaded("backing"), /backing was never uploaded/);
  });

  it("settled() waits for the upload in progress to end and throws nothing: a failed job's discard then finds its objects", async () => {
    const log: string[] = [];
    const uploads = new UploadQueue(recordingUpload(log, 20), new AbortController().signal);
    uploads.add("lead");
    await sleep(1);
    await uploads.settled();
    assert.deepEqual(log, ["start lead", "end lead"]);
  });

  it("starts no upload once the job's signal is aborted", async () => {
    const log: string[] = [];
    const abort = new AbortController();
    const uploads = new UploadQueue(recordingUpload(log, 10), abort.signal);
    uploads.add("vocals");
    uploads.add("backing");
    await sleep(1);
    abort.abort();
    await assert.rejects(uploads.finished(), { name: "AbortError" });
    assert.deepEqual(log, ["start vocals", "end vocals"]);
  });
});
