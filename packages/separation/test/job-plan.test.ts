import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { planSeparationJob, SeparationPlanError, type SeparationJobRequest } from "../src/job-plan.ts";
import { installedModel as entry } from "./support/installed-models.ts";

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
    models: [],
    ensemble: null,
    ...over,
    settings: { models: ["vocals"], ensemble: "avg_wave", vocalSplit: "vocalsplit", ...over.settings },
  });

describe("planSeparationJob", () => {
  it("a vocal separation with the setting's model writes the vocal pair and splits the vocal in the same pass", () => {
    const p = plan();
    assert.deepEqual(p.models, ["vocals"]);
    assert.deepEqual(p.run, {
      modelName: "vocals",
      stems: ["vocals", "instrumental"],
      split: { modelName: "vocalsplit", of: "vocals", stems: ["harmony", "reverb"], remainder: "lead" },
      manifests: [vocals.manifest, split.manifest],
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
      assert.deepEqual(p.run.manifests, [vocals.manifest], "the split model's manifest goes with its own, later run");
      assert.equal(p.firstShare, 1 / 2);
    }
  });

  it("an ensemble combines the members' vocal pairs and splits the combined vocal afterwards", () => {
    const p = plan({ models: ["vocals", "vocals2"], ensemble: "median_wave" });
    assert.deepEqual(p.models, ["vocals", "vocals2"]);
    assert.equal(p.ensemble?.algorithm, "median_wave");
    assert.equal(p.run.modelName, undefined);
    assert.deepEqual(p.run.ensemble?.models, ["vocals", "vocals2"]);
    assert.deepEqual(p.run.manifests, [vocals.manifest, vocals2.manifest]);
    assert.equal(p.run.stems, undefined);
    assert.equal(p.run.split, undefined);
    assert.equal(p.split?.onePass, false);
    assert.equal(p.outputFiles, 1 + 1 + 2 + 3);
    assert.equal(p.firstShare, 2 / 3);
    assert.equal(plan({ models: ["vocals", "vocals2"] }).ensemble?.algorithm, "avg_wave", "the setting's algorithm");
    assert.deepEqual(
      plan({ settings: { models: ["vocals", "vocals2"] } }).models,
      ["vocals", "vocals2"],
      "the setting's ensemble",
    );
  });

  it("a stem split publishes the model's stems and is never split", () => {
    const p = plan({ kind: "stem-split", settings: { models: ["stems"] } });
    assert.deepEqual(p.instruments, ["vocals", "drums", "bass", "other"]);
    assert.deepEqual(p.run, { modelName: "stems", manifests: [stems.manifest] });
    assert.equal(p.split, undefined);
    assert.equal(p.splitOff, undefined);
    assert.equal(p.outputFiles, 4);
  });

  it("output control's stems: the plan publishes those asked, in the record's order; without any of the vocal's parts it does not run the split", () => {
    const all = plan();
    assert.deepEqual(all.stems, ["vocals", "harmony", "reverb", "backing"]);
    const harmony = plan({ stems: ["backing", "harmony"] });
    assert.deepEqual(harmony.stems, ["harmony", "backing"]);
    assert.deepEqual(harmony.split, { model: split, onePass: true });
    const backing = plan({ stems: ["backing"] });
    assert.deepEqual(backing.stems, ["backing"]);
    assert.equal(backing.split, undefined, "the split model does not run for the backing alone");
    assert.equal(backing.run.split, undefined);
    assert.deepEqual(backing.run.manifests, [vocals.manifest]);
    assert.equal(backing.outputFiles, 1);
    assert.equal(backing.splitOff, undefined, "nothing to warn about: the job asked for no split");
    assert.deepEqual(plan({ kind: "stem-split", settings: { models: ["stems"] }, stems: ["bass", "vocals"] }).stems, [
      "vocals",
      "bass",
    ]);
    assert.deepEqual(plan({ settings: { vocalSplit: "none" } }).stems, ["vocals", "backing"]);
  });

  it("a stem the job does not publish is bad input naming it and the valid ones", () => {
    const refused = (request: Parameters<typeof plan>[0], message: RegExp) =>
      assert.throws(
        () => plan(request),
        (err: unknown) => err instanceof SeparationPlanError && err.failure === "bad-input" && message.test(err.message),
      );
    refused(
      { stems: ["drums"] },
      /"drums", which this vocal separation does not publish \(its stems: vocals, harmony, reverb, backing\)/,
    );
    refused({ stems: ["harmony"], settings: { vocalSplit: "none" } }, /"harmony".*\(its stems: vocals, backing\)/);
    refused({ kind: "stem-split", settings: { models: ["stems"] }, stems: ["backing"] }, /"backing".*vocals, drums, bass, other/);
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
    assert.equal(
      failure({ models: ["nope"] }),
      'permanent: model "nope" is not an installed separation model (installed: vocals, vocals2, stems, vocalsplit)',
    );
    assert.equal(
      failure({ models: ["vocalsplit"] }),
      'bad-input: model "vocalsplit" (stems: lead, harmony, reverb) cannot serve a vocal-separation: it needs a model with a vocals stem (installed that can: vocals, vocals2, stems)',
    );
    assert.equal(
      failure({
        kind: "stem-split",
        models: ["stems", "duo"],
        installed: [stems, entry("duo", ["guitar_l", "guitar_r"], ["guitar_l", "guitar_r"])],
      }),
      "bad-input: the models stems, duo have no stem in common (stems: vocals, drums, bass, other; duo: guitar_l, guitar_r), so their stem-split cannot be combined",
    );
    assert.equal(
      failure({ models: ["vocals", "vocals2"], ensemble: "loudest" }),
      'permanent: Unknown ensemble algorithm "loudest"',
    );
  });
});
