import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { JobFailure } from "@mixdown/jobs";
// as the worker's main does: onnxruntime's telemetry off for the process (a thread cannot set it)
import "@mixdown/separation/ort";
import { OnnxGraphBuilder } from "@mixdown/separation/testing/onnx-builder";
import { TaskThreadPool } from "../src/task-threads.ts";

/** The spinning task's cancel deadline here (CANCEL_DEADLINE_MS in service). */
const CANCEL_DEADLINE_MS = 1_500;

type Req = { op: "spin" | "cooperate" | "echo"; value?: number };
type Res = { value: number; threadId: number };

describe("task thread pool cancellation", () => {
  const pool = new TaskThreadPool<Req, Res>("test", new URL("./busy-loop-thread.ts", import.meta.url), 1, undefined, {
    cancelDeadlineMs: CANCEL_DEADLINE_MS,
  });
  after(() => pool.close());

  /** Starts `op`, aborts once the thread reported progress; resolves with the rejection and the ms it took. */
  async function cancelMidTask(op: Req["op"]): Promise<{ error: unknown; ms: number }> {
    const controller = new AbortController();
    let aborted = 0;
    const running = pool.run(
      { op },
      () => {
        aborted = performance.now();
        controller.abort(new JobFailure("cancelled", "cancelled by the test"));
      },
      controller.signal,
    );
    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    return { error, ms: performance.now() - aborted };
  }

  it("a task that checks its signal stops at once, on the same thread", async () => {
    await pool.ready();
    const before = await pool.run({ op: "echo", value: 1 }, () => {});
    const { error, ms } = await cancelMidTask("cooperate");
    assert.ok(error instanceof JobFailure && error.kind === "cancelled", String(error));
    assert.ok(ms < 500, `stopped after ${ms.toFixed(0)} ms`);
    const next = await pool.run({ op: "echo", value: 2 }, () => {});
    assert.deepEqual(next, { value: 2, threadId: before.threadId }, "the thread was kept");
  });

  it("a task that never yields is failed after the cancel deadline; the pool runs the next task on a fresh thread", async () => {
    const before = await pool.run({ op: "echo", value: 1 }, () => {});
    const { error, ms } = await cancelMidTask("spin");
    assert.ok(error instanceof JobFailure && error.kind === "cancelled", String(error));
    assert.ok(ms >= CANCEL_DEADLINE_MS - 50 && ms < CANCEL_DEADLINE_MS + 1_500, `rejected after ${ms.toFixed(0)} ms`);
    const next = await pool.run({ op: "echo", value: 3 }, () => {});
    assert.equal(next.value, 3);
    assert.notEqual(next.threadId, before.threadId, "a new thread replaced the spinning one");
  });

  it("a signal aborted before the task starts rejects without using a thread", async () => {
    const controller = new AbortController();
    controller.abort(new JobFailure("cancelled", "early"));
    await assert.rejects(
      pool.run({ op: "spin" }, () => {}, controller.signal),
      (e: unknown) => e instanceof JobFailure && e.message === "early",
    );
    assert.equal((await pool.run({ op: "echo", value: 4 }, () => {})).value, 4);
  });
});

describe("task thread pool idle unload", () => {
  const thread = new URL("./busy-loop-thread.ts", import.meta.url);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("terminates its threads after idleMs without a task, says so, and the next task starts fresh ones (preloaded again)", async () => {
    const events: string[] = [];
    const pool = new TaskThreadPool<Req, Res>("test", thread, 2, undefined, {
      idleMs: 300,
      onUnload: () => events.push("unload"),
      onLoad: () => events.push("load"),
    });
    try {
      const first = (await pool.ready()) as number[];
      const a = await pool.run({ op: "echo", value: 1 }, () => {});
      assert.ok(first.includes(a.threadId));
      // tasks keep it loaded: each one restarts the idle time
      for (let i = 0; i < 4; i++) {
        await sleep(150);
        await pool.run({ op: "echo", value: i }, () => {});
      }
      assert.equal(pool.loaded, true);
      assert.deepEqual(events, []);
      await sleep(600);
      assert.equal(pool.loaded, false);
      assert.deepEqual(events, ["unload"]);
      assert.deepEqual(await pool.ready(), [], "no threads left");
      const b = await pool.run({ op: "echo", value: 2 }, () => {});
      assert.equal(b.value, 2);
      assert.deepEqual(events, ["unload", "load"]);
      const second = (await pool.ready()) as number[];
      assert.equal(second.length, 2);
      assert.ok(
        second.every((id) => !first.includes(id)),
        "new threads, which ran their preload again",
      );
    } finally {
      await pool.close();
    }
  });

  it("never unloads while a task runs, however long it takes", async () => {
    const pool = new TaskThreadPool<Req, Res>("test", thread, 1, undefined, { idleMs: 100 });
    try {
      const controller = new AbortController();
      const running = pool.run({ op: "cooperate" }, () => {}, controller.signal).catch(() => undefined);
      await sleep(500);
      assert.equal(pool.loaded, true);
      controller.abort(new JobFailure("cancelled", "done"));
      await running;
      await sleep(400);
      assert.equal(pool.loaded, false);
    } finally {
      await pool.close();
    }
  });

  it("a pool started unloaded starts its threads with its first task", async () => {
    let loads = 0;
    const pool = new TaskThreadPool<Req, Res>("test", thread, 1, undefined, { startUnloaded: true, onLoad: () => loads++ });
    try {
      assert.equal(pool.loaded, false);
      assert.equal((await pool.run({ op: "echo", value: 7 }, () => {})).value, 7);
      assert.equal(pool.loaded, true);
      assert.equal(loads, 1);
    } finally {
      await pool.close();
    }
  });
});

describe("task thread pool cancellation during an onnxruntime call", () => {
  // A chain of MATMULS products of SIZE x SIZE matrices: one run is one long native call (seconds
  // on one core), longer than the 1.5 s after which the pool used to terminate a cancelled task's
  // thread, which killed the whole process once the call returned.
  const SIZE = 1024;
  const MATMULS = 32;
  let dir: string;
  let pool: TaskThreadPool<{ runs: number }, { threadId: number; msPerRun: number }>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-onnx-thread-"));
    const g = new OnnxGraphBuilder();
    let x = g.input("x", [SIZE, SIZE]);
    const identity = new Float32Array(SIZE * SIZE);
    for (let i = 0; i < SIZE; i++) identity[i * SIZE + i] = 1;
    const w = g.floatTensor(identity, [SIZE, SIZE]);
    for (let i = 0; i < MATMULS; i++) x = g.node("MatMul", [x, w], {}, i === MATMULS - 1 ? "y" : undefined);
    g.output("y", [SIZE, SIZE]);
    const modelPath = join(dir, "slow.onnx");
    await writeFile(modelPath, g.encode());
    pool = new TaskThreadPool("onnx", new URL("./onnx-thread.ts", import.meta.url), 1, { modelPath, size: SIZE });
  });
  after(async () => {
    await pool?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a task cancelled in the middle of a call stops when the call returns; the process and the thread live on", async () => {
    await pool.ready();
    const { threadId, msPerRun } = await pool.run({ runs: 1 }, () => {});
    const controller = new AbortController();
    let aborted = 0;
    const error = await pool
      .run(
        { runs: 3 },
        () => {
          if (aborted) return;
          aborted = performance.now();
          controller.abort(new JobFailure("cancelled", "cancelled by the test"));
        },
        controller.signal,
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const ms = performance.now() - aborted;
    assert.ok(error instanceof JobFailure && error.kind === "cancelled", String(error));
    // it waited for the call in flight (about one run), and not for the two runs after it
    assert.ok(
      ms < 1.8 * msPerRun + 1_000,
      `stopped ${ms.toFixed(0)} ms after the cancel; one run takes ${msPerRun.toFixed(0)} ms`,
    );
    const next = await pool.run({ runs: 1 }, () => {});
    assert.equal(next.threadId, threadId, "the thread was kept");
  });
});
