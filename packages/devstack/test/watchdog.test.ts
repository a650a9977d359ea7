import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, test } from "node:test";

const fixture = fileURLToPath(new URL("./fixtures/supervise-and-hang.ts", import.meta.url));
const started: number[] = [];
after(() => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, "SIGKILL");
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

test(
  "a service whose parent is SIGKILLed and that ignores its stop signal is SIGKILLed 10 s later, with the processes it started",
  { timeout: 60_000 },
  async () => {
    const parent = spawn(process.execPath, ["--import", "tsx", fixture], { stdio: ["ignore", "pipe", "inherit"] });
    const pids = await new Promise<{ service: number; serviceChild: number }>((resolve, reject) => {
      parent.stdout!.once("data", (line: Buffer) => resolve(JSON.parse(String(line))));
      parent.once("exit", (code) => reject(new Error(`the fixture exited (${code})`)));
    });
    started.push(pids.service, pids.serviceChild);
    assert.ok(isAlive(pids.service) && isAlive(pids.serviceChild));

    parent.kill("SIGKILL");
    const killedAt = Date.now();
    while ((isAlive(pids.service) || isAlive(pids.serviceChild)) && Date.now() - killedAt < 20_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = (Date.now() - killedAt) / 1000;
    assert.equal(isAlive(pids.service), false, "the service was left running");
    assert.equal(isAlive(pids.serviceChild), false, "the service's own child was left running");
    // SIGTERM about a second after the parent's death (ignored), SIGKILL 10 s after that.
    assert.ok(after >= 9, `gone ${after} s after the parent's death: before the grace period`);
    console.log(`service and its child gone ${after.toFixed(1)} s after the parent was SIGKILLed`);
  },
);
