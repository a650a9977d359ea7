import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { SMALL, writeTestModel } from "./support/mdx-test-models.ts";

const run = promisify(execFile);
const OPEN_SESSIONS = resolve(import.meta.dirname, "support/open-sessions.ts");

// onnxruntime 1.30's telemetry client writes `.ses` and `mat-debug-<pid>.log` into the temporary
// directory of every process that creates a session (src/ort.ts). A process that creates its
// sessions through this package, on its own thread and on the inference thread, leaves nothing
// there; the same process with the variable set to 0 shows what it would leave (if a later
// onnxruntime drops the client, that control fails: the workaround can go then).
describe("onnxruntime's telemetry", () => {
  let dir: string;
  let model: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mixdown-ort-telemetry-"));
    await writeTestModel(dir, { ...SMALL, name: "probe" });
    model = join(dir, "probe.onnx");
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** What a process creating both kinds of session left in its own fresh TMPDIR (tsx's cache aside). */
  async function leftBy(env: Record<string, string>): Promise<string[]> {
    const tmp = await mkdtemp(join(dir, "tmp-"));
    const childEnv: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp, ...env };
    if (!("ORT_DISABLE_TELEMETRY" in env)) delete childEnv.ORT_DISABLE_TELEMETRY;
    await run(process.execPath, ["--import", "tsx", OPEN_SESSIONS, model], { env: childEnv });
    return (await readdir(tmp)).filter((name) => !name.startsWith("tsx-")).sort();
  }

  it("is off: sessions created through the package leave nothing in TMPDIR", async () => {
    assert.deepEqual(await leftBy({}), []);
  });

  it("an operator's own ORT_DISABLE_TELEMETRY=0 is kept (and shows what the client leaves)", async () => {
    const left = await leftBy({ ORT_DISABLE_TELEMETRY: "0" });
    assert.ok(left.includes(".ses"), `left: ${left.join(", ")}`);
    assert.ok(
      left.some((name) => /^mat-debug-\d+\.log$/.test(name)),
      `left: ${left.join(", ")}`,
    );
  });
});
