import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { JOB_KINDS } from "@mixdown/jobs";
import { typeErrorsWithout } from "../../../packages/devstack/src/type-check.ts";
import { checkWorkerKinds, WORKER_KINDS } from "../src/kinds/index.ts";
import { splitHasOwnThread } from "../src/kinds/separation/handler.ts";

const APP_DIR = fileURLToPath(new URL("..", import.meta.url));
const KINDS = fileURLToPath(new URL("../src/kinds/index.ts", import.meta.url));

describe("the worker's job kinds", () => {
  it("has a worker for every kind of the catalogue", () => {
    assert.deepEqual(Object.keys(WORKER_KINDS).sort(), [...JOB_KINDS].sort());
    assert.doesNotThrow(() => checkWorkerKinds(WORKER_KINDS));
  });

  it("refuses to start without a kind's worker", () => {
    const { tts: _tts, "voice-blend": _blend, ...rest } = WORKER_KINDS;
    assert.throws(() => checkWorkerKinds(rest), /no handler for the job kinds voice-blend, tts of the catalogue/);
    assert.throws(() => checkWorkerKinds({ ...WORKER_KINDS, tts: {} as never }), /no handler for the job kinds tts /);
  });

  it("does not compile with a kind's worker missing", async () => {
    const { whole, without } = await typeErrorsWithout(APP_DIR, {
      module: KINDS,
      list: "WORKER_KINDS",
      type: "WorkerKinds",
      key: "webhook-delivery",
    });
    assert.deepEqual(whole, []);
    assert.equal(without.length, 1, without.join("\n"));
    assert.match(without[0]!, /Property '"webhook-delivery"' is missing/);
  });
});

describe("the vocal split's inference thread", () => {
  it("is its own with `own`, the vocals model's with `shared`, and with `auto` its own only beyond two cores", () => {
    for (const cores of [1, 2, 3, 16]) {
      assert.equal(splitHasOwnThread("own", cores), true);
      assert.equal(splitHasOwnThread("shared", cores), false);
      assert.equal(splitHasOwnThread("auto", cores), cores > 2);
    }
  });
});
