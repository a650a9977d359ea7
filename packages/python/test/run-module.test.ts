import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ImportProblem, lastJsonLine, pythonCommand, runPythonModule } from "../src/index.ts";

// A converter-shaped module: prints a JSON summary last, exits 2 for "this file cannot be converted".
const MODULE = `
import json, os, sys
path = sys.argv[1]
if path == "refuse":
    print("reading the file", file=sys.stderr)
    print("not a checkpoint of this kind", file=sys.stderr)
    sys.exit(2)
if path == "crash":
    raise RuntimeError("the converter broke")
print("progress")
print(json.dumps({"path": path, "pythonpath": os.environ["PYTHONPATH"]}))
`;

let dir: string;
let python: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mixdown-python-"));
  await mkdir(join(dir, "pkg", "fake_converter"), { recursive: true });
  await writeFile(join(dir, "pkg", "fake_converter", "__init__.py"), "");
  await writeFile(join(dir, "pkg", "fake_converter", "__main__.py"), MODULE);
  python = await pythonCommand();
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const run = (arg: string) =>
  runPythonModule({
    python,
    module: "fake_converter",
    args: [arg],
    pythonPath: join(dir, "pkg"),
    label: "the fake converter",
    fileError: (reason) => new ImportProblem(`file.pth: ${reason}`),
    env: { ...process.env, PYTHONPATH: "/elsewhere" },
  });

test("exit 0: the module ran with its folder first on PYTHONPATH (the caller's kept after it), and its last line is its JSON", async () => {
  const { stdout } = await run("model.pth");
  assert.deepEqual(lastJsonLine(stdout, "the fake converter"), {
    path: "model.pth",
    pythonpath: `${join(dir, "pkg")}:/elsewhere`,
  });
  assert.throws(() => lastJsonLine("progress\n[1, 2]\n", "the fake converter"), /the fake converter printed no JSON object last/);
});

test("exit 2 is the file's fault, with the converter's last line of stderr; any other failure names the converter and its stderr's tail", async () => {
  await assert.rejects(
    run("refuse"),
    (err: Error) => err instanceof ImportProblem && err.message === "file.pth: not a checkpoint of this kind",
  );
  await assert.rejects(
    run("crash"),
    (err: Error) =>
      !(err instanceof ImportProblem) &&
      /^the fake converter failed \(exit 1\):/.test(err.message) &&
      /RuntimeError: the converter broke/.test(err.message),
  );
});
