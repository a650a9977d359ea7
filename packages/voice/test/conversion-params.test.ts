import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CONVERSION_CONTROLS,
  CONVERSION_DEFAULTS,
  readStoredConversionParams,
  StoredParamsError,
} from "../src/conversion-params.ts";

test("stored params read back as stored; a control a row lacks takes its default; the defaults are the controls' own", () => {
  const stored = {
    conversionStrength: 0.8,
    modelVolumeMix: 0,
    pitchShift: -12,
    pre: { highPassFilter: { cutoff_frequency_hz: 120 } },
    post: {},
  };
  assert.deepEqual(readStoredConversionParams(JSON.parse(JSON.stringify(stored))), stored);
  assert.deepEqual(readStoredConversionParams({ pitchShift: 3 }), { ...CONVERSION_DEFAULTS, pitchShift: 3 });
  assert.deepEqual(readStoredConversionParams({}), CONVERSION_DEFAULTS);
  for (const [name, range] of Object.entries(CONVERSION_CONTROLS))
    assert.equal(CONVERSION_DEFAULTS[name as keyof typeof CONVERSION_CONTROLS], range.default);
});

test("a row no conversion can run is refused with what is wrong: not an object, a control out of range or not a number, an unknown effect", () => {
  for (const [stored, message] of [
    [null, /not an object/],
    [[1, 2], /not an object/],
    [{ pitchShift: 25 }, /pitchShift 25 is not a number from -24 to 24/],
    [{ conversionStrength: "0.5" }, /conversionStrength "0.5" is not a number from 0 to 1/],
    [{ pre: { fuzz: {} } }, /the stored pre: .*fuzz/],
  ] as const)
    assert.throws(
      () => readStoredConversionParams(stored),
      (err: Error) => err instanceof StoredParamsError && message.test(err.message),
    );
});
