import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { threadId } from "node:worker_threads";
import { ModelLoadError, openSession } from "../src/inference-options.ts";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";

const SPEC = 4 * SMALL.dimF * SMALL.dimT;
const DIMS = [1, 4, SMALL.dimF, SMALL.dimT];

function ramp(scale: number): Float32Array {
  return Float32Array.from({ length: SPEC }, (_, i) => ((i % 97) - 48) * scale);
}

describe("sessions on the shared inference thread", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "inference-thread-"));
    await writeTestModel(dir, { name: "double", ...SMALL, channelGains: [2, 2, 2, 2] });
    await writeTestModel(dir, { name: "half", ...SMALL, channelGains: [0.5, 0.5, 0.5, 0.5] });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("runs each session's own model, interleaved, and keeps the others running when one is released", async () => {
    const double = await openSession(join(dir, "double.onnx"));
    const half = await openSession(join(dir, "half.onnx"));
    try {
      const input = ramp(0.01);
      const [a, b] = await Promise.all([double.run("input", input, DIMS, "output"), half.run("input", input, DIMS, "output")]);
      assert.deepEqual(
        a.data,
        input.map((x) => Math.fround(2 * x)),
      );
      assert.deepEqual(
        b.data,
        input.map((x) => Math.fround(0.5 * x)),
      );

      await double.release();
      assert.equal(double.unusable, true);
      await assert.rejects(double.run("input", input, DIMS, "output"), /released/);
      assert.equal(half.unusable, false);
      const again = await half.run("input", input, DIMS, "output");
      assert.deepEqual(again.data, b.data);
    } finally {
      await Promise.all([double.release(), half.release()]);
    }
  });

  it("runs a session on a named inference thread apart from the shared one; sessions naming it share it", async () => {
    const [shared, alsoShared, named, alsoNamed] = await Promise.all([
      openSession(join(dir, "double.onnx")),
      openSession(join(dir, "half.onnx")),
      openSession(join(dir, "double.onnx"), { thread: "split" }),
      openSession(join(dir, "half.onnx"), { thread: "split" }),
    ]);
    const local = await openSession(join(dir, "half.onnx"), { thread: false });
    try {
      assert.equal(shared.threadId, alsoShared.threadId);
      assert.equal(named.threadId, alsoNamed.threadId);
      assert.notEqual(named.threadId, shared.threadId);
      assert.ok(![shared.threadId, named.threadId].includes(threadId), "neither runs on the calling thread");
      assert.equal(local.threadId, threadId);
      const input = ramp(0.01);
      const [a, b] = await Promise.all([shared.run("input", input, DIMS, "output"), named.run("input", input, DIMS, "output")]);
      assert.deepEqual(a.data, b.data, "the same model on either thread gives the same output");
      // releasing the named thread's sessions ends it; the shared one runs on
      await Promise.all([named.release(), alsoNamed.release()]);
      assert.equal(shared.unusable, false);
      const reopened = await openSession(join(dir, "double.onnx"), { thread: "split" });
      assert.notEqual(reopened.threadId, named.threadId, "a new thread under the same name");
      await reopened.release();
    } finally {
      await Promise.all([shared.release(), alsoShared.release(), named.release(), alsoNamed.release(), local.release()]);
    }
  });

  it("opens sessions again after the last one is released (a new thread)", async () => {
    const first = await openSession(join(dir, "double.onnx"));
    await first.release();
    const second = await openSession(join(dir, "double.onnx"));
    try {
      const out = await second.run("input", ramp(0.02), DIMS, "output");
      assert.equal(out.data.length, SPEC);
      assert.equal(second.unusable, false);
    } finally {
      await second.release();
    }
  });

  it("fails the open of a file onnxruntime cannot load and leaves the thread's other sessions usable", async () => {
    const good = await openSession(join(dir, "half.onnx"));
    try {
      await assert.rejects(openSession(join(dir, "missing.onnx")), (err: Error) => {
        assert.ok(err instanceof ModelLoadError);
        assert.match(err.message, /missing\.onnx/);
        return true;
      });
      const out = await good.run("input", ramp(0.01), DIMS, "output");
      assert.equal(out.data.length, SPEC);
    } finally {
      await good.release();
    }
  });
});
