import assert from "node:assert/strict";
import { test } from "node:test";
import { Type } from "typebox";
import { ApiError } from "../src/http/errors.ts";
import { FilePart, FormSchema } from "../src/http/form-schema.ts";
import type { ReceivedFile } from "../src/uploads/receive-form.ts";

const schema = Type.Object({
  modelId: Type.Integer({ minimum: 1, maximum: 2147483647 }),
  song: FilePart("the song"),
  strength: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0.5 })),
  shift: Type.Optional(Type.Number({ minimum: -24 })),
  mode: Type.Optional(Type.String({ enum: ["fast", "best"] })),
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 5 })),
  cover: Type.Optional(FilePart("a picture")),
  link: Type.Optional(Type.String({ format: "uri", maxLength: 40 })),
});
const song: ReceivedFile = { field: "song", path: "/tmp/x", size: 1, filename: "x.wav", head: Buffer.alloc(0), sha256: "" };

/** The 422 message a form gets, or "ok". */
function messageOf(
  form: FormSchema<typeof schema>,
  fields: Record<string, string>,
  files: Record<string, ReceivedFile> = { song },
) {
  try {
    form.read({ fields: new Map(Object.entries(fields)), files: new Map(Object.entries(files)) });
    return "ok";
  } catch (err) {
    assert.ok(err instanceof ApiError && err.statusCode === 422, String(err));
    return err.message;
  }
}

test("a form's text fields are converted to their declared types and checked against the schema's constraints", () => {
  const form = new FormSchema(schema);
  assert.deepEqual(form.textFields, ["modelId", "strength", "shift", "mode", "text", "link"]);
  assert.deepEqual(form.numericFields, ["modelId", "strength", "shift"]);
  const values = form.read({
    fields: new Map([
      ["modelId", " 12 "],
      ["strength", "0.25"],
      ["mode", "best"],
      ["text", "héllo"],
      ["stray", "x"],
    ]),
    files: new Map([["song", song]]),
  });
  assert.deepEqual(values, { modelId: 12, strength: 0.25, mode: "best", text: "héllo", song });
  // An unfilled input of a number or a choice is absent: its default applies.
  assert.deepEqual(
    form.read({
      fields: new Map([
        ["modelId", "3"],
        ["strength", " "],
        ["mode", ""],
      ]),
      files: new Map([["song", song]]),
    }),
    {
      modelId: 3,
      song,
    },
  );
});

test("each failure is worded as the multipart creates have always worded it, naming the field and what was sent", () => {
  const form = new FormSchema(schema);
  const cases: Array<[Record<string, string>, string]> = [
    [{}, "modelId is required"],
    [{ modelId: "" }, "modelId is required"],
    [{ modelId: "3x" }, 'modelId must be a positive integer (got "3x")'],
    [{ modelId: "0" }, 'modelId must be a positive integer (got "0")'],
    [{ modelId: "+3" }, 'modelId must be a positive integer (got "+3")'],
    [{ modelId: "99999999999" }, 'modelId must be a positive integer (got "99999999999")'],
    [{ modelId: "1", strength: "strong" }, 'strength must be a number between 0 and 1 (got "strong")'],
    [{ modelId: "1", strength: "1.5" }, "strength must be between 0 and 1 (got 1.5)"],
    [{ modelId: "1", strength: "Infinity" }, 'strength must be a number between 0 and 1 (got "Infinity")'],
    [{ modelId: "1", shift: "-30" }, "shift must be at least -24 (got -30)"],
    [{ modelId: "1", mode: "slow" }, 'mode must be one of fast, best (got "slow")'],
    [{ modelId: "1", text: "" }, "text must be at least 1 characters long"],
    [{ modelId: "1", text: "😀😀😀😀😀😀" }, "text is 6 characters long; the limit is 5 characters"],
    [{ modelId: "1", text: "😀😀😀😀😀" }, "ok"],
    // A link's format is the kind's own rules' to judge (jobOrigin, a model's link): an IRI passes here.
    [{ modelId: "1", link: "https://example.com/ü a" }, "ok"],
    [{ modelId: "1", link: `https://example.com/${"x".repeat(30)}` }, "link is 50 characters long; the limit is 40 characters"],
  ];
  for (const [fields, expected] of cases) assert.equal(messageOf(form, fields), expected, JSON.stringify(fields));
});

test("text fields are checked before file parts, each in the schema's order; a kind words its own failures", () => {
  const plain = new FormSchema(schema);
  assert.equal(messageOf(plain, { strength: "2" }, {}), "modelId is required");
  assert.equal(messageOf(plain, { modelId: "1", strength: "2" }, {}), "strength must be between 0 and 1 (got 2)");
  assert.equal(messageOf(plain, { modelId: "1" }, {}), "song is required");
  const worded = new FormSchema(schema, {
    song: { required: () => "song is required (a wav file part)" },
    text: { maxLength: (f) => `text: ${f.raw?.length} is too long` },
  });
  assert.equal(messageOf(worded, { modelId: "1" }, {}), "song is required (a wav file part)");
  assert.equal(messageOf(worded, { modelId: "1", text: "toolong" }), "text: 7 is too long");
});
