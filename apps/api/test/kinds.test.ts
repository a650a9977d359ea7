import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { JOB_TABLE_KINDS } from "@mixdown/jobs";
import { typeErrorsWithout } from "../../../packages/devstack/src/type-check.ts";
import { API_KINDS } from "../src/kinds/index.ts";

const APP_DIR = fileURLToPath(new URL("..", import.meta.url));
const KINDS = fileURLToPath(new URL("../src/kinds/index.ts", import.meta.url));
// The app's own module augmentations (the caller on a request, multipart) come with it.
const APP = fileURLToPath(new URL("../src/app.ts", import.meta.url));

describe("the API's job kinds", () => {
  it("serves every job table kind of the catalogue", () => {
    assert.deepEqual(Object.keys(API_KINDS).sort(), [...JOB_TABLE_KINDS].sort());
    for (const kind of JOB_TABLE_KINDS) {
      assert.equal(typeof API_KINDS[kind].routes, "function");
      assert.equal(typeof API_KINDS[kind].service, "function");
    }
  });

  it("does not compile with a kind's routes missing", async () => {
    const { whole, without } = await typeErrorsWithout(APP_DIR, {
      module: KINDS,
      list: "API_KINDS",
      type: "ApiKinds",
      key: "voice-blend",
      preamble: `import type {} from ${JSON.stringify(APP)};`,
    });
    assert.deepEqual(whole, []);
    assert.equal(without.length, 1, without.join("\n"));
    assert.match(without[0]!, /Property '"voice-blend"' is missing/);
  });
});
