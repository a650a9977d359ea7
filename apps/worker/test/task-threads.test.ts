import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { JobFailure } from "@mixdown/jobs";
import { CANCEL_GRACE_MS, TaskThreadPool } from "../src/task-threads.ts";

type Req = { op: "spin" | "cooperate" | "echo"; value?: number };
type Res = { value: number; threadId: number };

describe("task thread pool cancellation", () => {
  const pool = new TaskThreadPool<Req, Res>("test", new URL("./busy-loop-thread.ts", import.meta.url), 1, undefined);
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

  it("a task that never yields has its thread terminated after the grace period; the pool runs the next task on a fresh one", async () => {
    const before = await pool.run({ op: "echo", value: 1 }, () => {});
    const { error, ms } = await cancelMidTask("spin");
    assert.ok(error instanceof JobFailure && error.kind === "cancelled", String(error));
    assert.ok(ms >= CANCEL_GRACE_MS - 50 && ms < CANCEL_GRACE_MS + 1_500, `rejected after ${ms.toFixed(0)} ms`);
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
