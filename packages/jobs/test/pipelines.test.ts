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

test("a repair takes and gives a vocal, a master takes and gives a mix", () => {
  assert.equal(pipelineChainProblem("mix", ["separate", "repair", "convert", "recombine", "master"]), null);
  assert.equal(pipelineChainProblem("vocal", ["repair", "convert", "repair"]), null);
  assert.equal(pipelineChainProblem("mix", ["master"]), null);
  assert.match(
    pipelineChainProblem("mix", ["repair"]) ?? "",
    /^steps\[0\]: repair takes a vocal, but the input \(input=mix\) gives a mix; put a separate before it/,
  );
  assert.match(
    pipelineChainProblem("mix", ["separate", "repair", "master"]) ?? "",
    /^steps\[2\]: master takes a mix, but steps\[1\] \(repair\) gives a vocal$/,
  );
  assert.match(pipelineChainProblem("vocal", ["master"]) ?? "", /^steps\[0\]: master takes a mix, but the input \(input=vocal\)/);
  // the recombine is done by the conversion right before it: a repair between them has nothing to mix
  assert.match(
    pipelineChainProblem("mix", ["separate", "convert", "repair", "recombine"]) ?? "",
    /^steps\[3\]: recombine must follow a convert/,
  );
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
