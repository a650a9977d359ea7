import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { typeErrorsWithout } from "../../devstack/src/type-check.ts";
import { JOB_TABLE_KINDS } from "@mixdown/jobs";
import { JOB_TABLE_ROWS } from "../src/index.ts";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const KINDS = fileURLToPath(new URL("../src/repositories/kinds/index.ts", import.meta.url));

describe("job table kinds", () => {
  it("has the rows of every job table kind of the catalogue, each under its own name", () => {
    assert.deepEqual(Object.keys(JOB_TABLE_ROWS).sort(), [...JOB_TABLE_KINDS].sort());
    for (const kind of JOB_TABLE_KINDS) assert.equal(JOB_TABLE_ROWS[kind].kind, kind);
  });

  it("does not compile with a kind's rows missing", async () => {
    const { whole, without } = await typeErrorsWithout(PACKAGE_DIR, {
      module: KINDS,
      list: "JOB_TABLE_ROWS",
      type: "JobTableRowsByKind",
      key: "tts",
    });
    assert.deepEqual(whole, []);
    assert.equal(without.length, 1, without.join("\n"));
    assert.match(without[0]!, /Property 'tts' is missing/);
  });
});
