import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { planSeparationJob, SeparationPlanError, type SeparationJobRequest } from "../src/job-plan.ts";
import { modelEntry as entry } from "./support/model-entries.ts";

const vocals = entry("vocals", ["vocals"], ["vocals", "instrumental"]);
const vocals2 = entry("vocals2", ["vocals"], ["vocals", "instrumental"]);
const stems = entry("stems", ["vocals", "drums", "bass", "other"], ["vocals", "drums", "bass", "other", "backing"]);
const split = entry("vocalsplit", ["lead", "harmony", "reverb"], ["lead", "harmony", "reverb"]);
const installed = [vocals, vocals2, stems, split];

const plan = (
  over: Omit<Partial<SeparationJobRequest>, "settings"> & { settings?: Partial<SeparationJobRequest["settings"]> } = {},
) =>
  planSeparationJob({
    kind: "vocal-separation",
    installed,
    model: null,
    ensemble: null,
    ...over,
    settings: { model: "vocals", ensemble: "avg_wave", vocalSplit: "vocalsplit", ...over.settings },
  });

describe("planSeparationJob", () => {
  it("a vocal separation with the setting's model writes the vocal pair and splits the vocal in the same pass", () => {
    const p = plan();
    assert.equal(p.name, "vocals");
    assert.deepEqual(p.run, {
      modelName: "vocals",
      stems: ["vocals", "instrumental"],
      split: { modelName: "vocalsplit", of: "vocals", stems: ["harmony", "reverb"], remainder: "lead" },
    });
    assert.deepEqual(p.split, { model: split, onePass: true });
    assert.equal(p.splitOff, undefined);
    assert.equal(p.outputFiles, 1 + 3);
    assert.equal(p.firstShare, 0.95);
  });

  it("splits afterwards when the split model reads its input twice, or runs at another rate", () => {
    for (const other of [{ readsInputOnce: false }, { sampleRate: 48000 }]) {
      const p = plan({ installed: [vocals, { ...split, ...other }] });
      assert.equal(p.split?.onePass, false);
      assert.equal(p.run.split, undefined);
      assert.equal(p.firstShare, 1 / 2);
    }
  });

  it("an ensemble combines the members' vocal pairs and splits the combined vocal afterwards", () => {
    const p = plan({ model: "vocals,vocals2", ensemble: "median_wave" });
    assert.equal(p.name, "vocals,vocals2");
    assert.equal(p.ensemble?.algorithm, "median_wave");
    assert.deepEqual(p.run.ensemble?.models, ["vocals", "vocals2"]);
    assert.equal(p.run.stems, undefined);
    assert.equal(p.run.split, undefined);
    assert.equal(p.split?.onePass, false);
    assert.equal(p.outputFiles, 1 + 1 + 2 + 3);
    assert.equal(p.firstShare, 2 / 3);
    assert.equal(plan({ model: "vocals,vocals2" }).ensemble?.algorithm, "avg_wave", "the setting's algorithm");
  });

  it("a stem split publishes the model's stems and is never split", () => {
    const p = plan({ kind: "stem-split", settings: { model: "stems" } });
    assert.deepEqual(p.instruments, ["vocals", "drums", "bass", "other"]);
    assert.deepEqual(p.run, { modelName: "stems" });
    assert.equal(p.split, undefined);
    assert.equal(p.splitOff, undefined);
    assert.equal(p.outputFiles, 4);
  });

  it("says why a vocal separation has no split", () => {
    assert.equal(plan({ settings: { vocalSplit: "none" } }).splitOff, "SEPARATION_MODEL_VOCAL_SPLIT=none");
    assert.match(plan({ installed: [vocals] }).splitOff!, /"vocalsplit" \(SEPARATION_MODEL_VOCAL_SPLIT\) is not installed/);
    assert.equal(plan({ installed: [vocals] }).outputFiles, 1);
  });

  it("refuses what cannot run: bad input when it never will, permanent when the operator must act", () => {
    const failure = (over: Parameters<typeof plan>[0]) => {
      try {
        plan(over);
      } catch (err) {
        assert.ok(err instanceof SeparationPlanError);
        return `${err.failure}: ${err.message}`;
      }
      assert.fail("planned");
    };
    assert.equal(failure({ model: "nope" }), 'permanent: The separation model "nope" is not installed');
    assert.equal(
      failure({ model: "vocalsplit" }),
      'bad-input: The separation model "vocalsplit" (stems: lead, harmony, reverb) cannot serve a vocal-separation',
    );
    assert.equal(failure({ model: "vocals,vocals2", ensemble: "loudest" }), 'permanent: Unknown ensemble algorithm "loudest"');
  });
});
