import assert from "node:assert/strict";
import { test } from "node:test";
import { PIPELINE_PRESETS, pipelineChainProblem } from "../src/index.ts";

test("a chain is typed: convert takes a vocal, recombine follows a convert after a separate", () => {
  assert.equal(pipelineChainProblem("mix", ["separate", "convert", "recombine"]), null);
  assert.equal(pipelineChainProblem("vocal", ["convert", "convert"]), null);
  assert.equal(pipelineChainProblem("mix", ["separate"]), null);
  assert.match(
    pipelineChainProblem("mix", ["convert"]) ?? "",
    /^steps\[0\]: convert takes a vocal, but the input \(input=mix\) gives a mix/,
  );
  assert.match(
    pipelineChainProblem("mix", ["separate", "separate"]) ?? "",
    /^steps\[1\]: separate takes a mix, but steps\[0\] \(separate\) gives a vocal/,
  );
  assert.match(pipelineChainProblem("mix", ["separate", "recombine"]) ?? "", /^steps\[1\]: recombine must follow a convert/);
  assert.match(
    pipelineChainProblem("vocal", ["convert", "recombine"]) ?? "",
    /^steps\[1\]: recombine must follow a convert that follows a separate/,
  );
  assert.match(
    pipelineChainProblem("mix", ["separate", "convert", "recombine", "convert"]) ?? "",
    /^steps\[3\]: convert takes a vocal/,
  );
  assert.equal(pipelineChainProblem("mix", []), "steps: at least one step is required");
});

test("every preset is a chain on its own input", () => {
  for (const [name, preset] of Object.entries(PIPELINE_PRESETS))
    assert.equal(
      pipelineChainProblem(
        preset.input,
        preset.steps.map((s) => s.step),
      ),
      null,
      name,
    );
});
