import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { releaseNow } from "../src/release-now.ts";

describe("releaseNow", () => {
  it("frees an array that is the whole of its buffer at once: the buffer is detached and the process's ArrayBuffer memory drops", () => {
    const before = process.memoryUsage().arrayBuffers;
    const array = new Float32Array(16 * 1024 * 1024).fill(1);
    assert.ok(process.memoryUsage().arrayBuffers - before >= 64 * 1024 * 1024);
    releaseNow(array);
    assert.equal(array.buffer.detached, true);
    assert.equal(array.length, 0);
    assert.ok(process.memoryUsage().arrayBuffers - before < 1024 * 1024, "freed without a collection");
  });

  it("leaves a view into a larger buffer, shared memory and an array already released alone", () => {
    const whole = new Float32Array(1024).fill(2);
    releaseNow(whole.subarray(0, 512));
    releaseNow(whole.subarray(512));
    assert.equal(whole.buffer.detached, false);
    assert.equal(whole[1023], 2);

    const shared = new Float32Array(new SharedArrayBuffer(4096)).fill(3);
    releaseNow(shared);
    assert.equal(shared[0], 3);

    const released = new Float32Array(8);
    releaseNow(released);
    releaseNow(released);
    assert.equal(released.buffer.detached, true);
  });
});
