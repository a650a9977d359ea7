import assert from "node:assert/strict";
import { test } from "node:test";
import { Type } from "typebox";
import { Settings } from "typebox/system";
import { SchemaCheck, typedAt, Url, type SchemaProblem } from "../src/index.ts";

const lines = (problems: SchemaProblem[]) => problems.map((p) => `${p.path.join(".") || "(top)"}: ${p.message}`);

const File = Type.Object(
  {
    name: Type.Refine(
      Type.String(),
      (name) => /^[a-z]+$/.test(name),
      () => "a plain file name",
    ),
    url: Url("https"),
    size: Type.Union([Type.Integer({ exclusiveMinimum: 0 }), Type.Null()]),
    hash: Type.Optional(Type.String({ pattern: "^[0-9a-f]{4,63}$" })),
    note: Type.Optional(Type.String({ minLength: 10 })),
  },
  { additionalProperties: false },
);
const Document = new SchemaCheck(
  Type.Object(
    {
      version: Type.Literal(1),
      kind: Type.Enum(["separation", "voice"]),
      count: Type.Integer({ minimum: 1, maximum: 10 }),
      files: Type.Array(File, { minItems: 1 }),
      ids: Type.Record(Type.String(), Type.Array(Type.Integer())),
      switch: Type.Union([Type.Literal(true), Type.Literal(false)]),
    },
    { additionalProperties: false },
  ),
);
const good = {
  version: 1,
  kind: "voice",
  count: 3,
  files: [{ name: "model", url: "https://example.com/model", size: null }],
  ids: { a: [1, 2] },
  switch: true,
};

test("a value of its schema has no problems and passes the check", () => {
  assert.deepEqual(Document.problems(good), []);
  assert.equal(Document.check(good), true);
});

test("words each failure as the settings and files have always been worded", () => {
  const problems = Document.problems({
    version: "1",
    kind: "text",
    count: 1.5,
    files: [{ name: "Model!", url: "http://example.com/model", size: -1, hash: "xyz", note: "short", extra: 1, more: 2 }],
    ids: { a: [1, 2.5, "x"], b: 3 },
    switch: "maybe",
  });
  assert.deepEqual(lines(problems), [
    "version: Invalid input: expected 1",
    'kind: Invalid option: expected one of "separation"|"voice"',
    "count: Invalid input: expected int, received number",
    "files.0.name: a plain file name",
    "files.0.url: Invalid URL",
    "files.0.size: Too small: expected number to be >0",
    "files.0.hash: Invalid string: must match pattern /^[0-9a-f]{4,63}$/",
    "files.0.note: Too small: expected string to have >=10 characters",
    'files.0: Unrecognized keys: "extra", "more"',
    "ids.a.1: Invalid input: expected int, received number",
    "ids.a.2: Invalid input: expected number, received string",
    "ids.b: Invalid input: expected array, received number",
    "switch: Invalid input",
  ]);
});

test("names what is missing by what its schema expected, in the schema's order", () => {
  assert.deepEqual(lines(Document.problems({ files: [], ids: [], count: Number.NaN })), [
    "version: Invalid input: expected 1",
    'kind: Invalid option: expected one of "separation"|"voice"',
    "count: Invalid input: expected number, received NaN",
    "files: Too small: expected array to have >=1 items",
    "ids: Invalid input: expected record, received array",
    "switch: Invalid input",
  ]);
  assert.deepEqual(lines(Document.problems([])), ["(top): Invalid input: expected object, received array"]);
  assert.deepEqual(lines(Document.problems({ ...good, count: 11, files: [{ name: "a", url: "https://x" }] })), [
    "count: Too big: expected number to be <=10",
    "files.0.size: Invalid input: expected number, received undefined",
  ]);
  // A number that is not whole is told so, not also that it is out of bounds.
  assert.deepEqual(lines(Document.problems({ ...good, count: 0.5, files: [{ ...good.files[0], size: -0.5 }] })), [
    "count: Invalid input: expected int, received number",
    "files.0.size: Invalid input: expected int, received number",
  ]);
});

test("names every problem, past TypeBox's own limit of eight, and leaves that limit as it was", () => {
  const files = Array.from({ length: 12 }, () => ({ name: "a", url: "https://x", size: 0 }));
  assert.equal(Document.problems({ ...good, files }).length, 12);
  assert.equal(new SchemaCheck(Type.Array(Type.String())).problems([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).length, 10);
  assert.equal(Settings.Get().maxErrors, 8);
});

test("tells which places are still of their type, for the rules that read them", () => {
  const problems = Document.problems({ ...good, count: 0, files: [{ ...good.files[0], size: "big" }] });
  assert.equal(typedAt(problems, ["count"]), true);
  assert.equal(typedAt(problems, ["files", 0]), false);
  assert.equal(typedAt(problems, []), false);
  assert.equal(typedAt(Document.problems({ ...good, count: 0 }), []), true);
});

test("puts the problems of rules beyond the schema in the schema's order, a place's own after those inside it", () => {
  const value = { ...good, files: [good.files[0], { ...good.files[0], size: 0 }] };
  const problems = Document.problems(value);
  const rule = (path: Array<string | number>, message: string) => ({ path, message, untyped: false });
  assert.deepEqual(
    lines(Document.inOrder(value, [rule([], "two files"), rule(["files", 0], "no hash"), ...problems, rule(["kind"], "kind")])),
    ["kind: kind", "files.0: no hash", "files.1.size: Too small: expected number to be >0", "(top): two files"],
  );
});

test("a URL is one new URL() takes, spaces around it aside, and of the protocol named", () => {
  const any = new SchemaCheck(Url());
  assert.deepEqual(
    ["https://example.com", " http://minio:9000 ", "mailto:a@b.c", "nope", "http://", ""].map((url) => any.check(url)),
    [true, true, true, false, false, false],
  );
  assert.equal(new SchemaCheck(Url("https")).check("http://example.com"), false);
});
