import assert from "node:assert/strict";
import { test } from "node:test";
import { modelListProblem, parseModelList } from "../src/index.ts";

test("a model list as written: names trimmed, empty ones kept for the caller to refuse by name", () => {
  assert.deepEqual(parseModelList(" vocals , stems"), ["vocals", "stems"]);
  assert.deepEqual(parseModelList("a,,b,"), ["a", "", "b", ""]);
});

test("a model list's problems are worded once, after the field that gave it", () => {
  assert.equal(modelListProblem("vocals,stems"), null);
  assert.equal(modelListProblem("six"), null);
  assert.equal(modelListProblem("a,,b"), '"a,,b" has an empty model name');
  assert.equal(modelListProblem("a,b,"), '"a,b," has an empty model name');
  assert.equal(modelListProblem("a, b,a"), `names "a" twice: an ensemble's models must differ`);
});
