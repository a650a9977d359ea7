import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { after, test } from "node:test";
import { type RunningUp, isAlive, startUp, waitUntil } from "./run-up.ts";

const run = promisify(execFile);

let up: RunningUp | undefined;
let polling = true;
after(async () => {
  polling = false;
  up?.interrupt();
  await up?.exited;
  await up?.cleanUp();
});

test(
  "up restarts a PostgreSQL killed with SIGKILL once its crash recovery has run; the API answers 503 with Retry-After meanwhile, never 500, and keeps every job",
  { timeout: 300_000 },
  async () => {
    // No worker: jobs stay queued, which is all this needs (their rows must survive the crash).
    up = await startUp({ MIXDOWN_UP_TEST_WORKER_ENTRY: "apps/cli/test/fixtures/no-such-worker.ts" });
    const running = up;
    const auth = { authorization: `Bearer ${await running.key}` };
    const song = path.join(running.home, "song.wav");
    await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=220:d=1", song]);
    const createJob = async () => {
      const form = new FormData();
      form.set("inputFile", new Blob([await readFile(song)]), "song.wav");
      return fetch(`${running.baseUrl}/api/kits/v1/vocal-separations`, { method: "POST", headers: auth, body: form });
    };
    const listIds = async () => {
      const res = await fetch(`${running.baseUrl}/api/kits/v1/vocal-separations?perPage=100`, { headers: auth });
      return {
        status: res.status,
        ids: res.status === 200 ? ((await res.json()) as { data: Array<{ id: number }> }).data.map((j) => j.id) : [],
      };
    };

    const first = await createJob();
    assert.equal(first.status, 200, await first.clone().text());
    const firstId = ((await first.json()) as { id: number }).id;

    const postgresPid = running.pid("postgres");
    assert.ok(postgresPid && isAlive(postgresPid), "postgres is a supervised child with a pid file");
    // The API is asked all along: every answer is 200 or a 503 that says when to come back.
    const answers: Array<{ at: number; status: number; retryAfter: string | null; body: string }> = [];
    const poll = (async () => {
      while (polling) {
        const res = await fetch(`${running.baseUrl}/api/kits/v1/vocal-separations`, { headers: auth }).catch(() => undefined);
        if (res)
          answers.push({
            at: Date.now(),
            status: res.status,
            retryAfter: res.headers.get("retry-after"),
            body: await res.text(),
          });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const killedAt = Date.now();
    process.kill(postgresPid, "SIGKILL");
    await waitUntil(
      "postgres runs again under a new pid",
      () => {
        const pid = running.pid("postgres");
        return pid !== undefined && pid !== postgresPid && isAlive(pid);
      },
      120_000,
    );
    await waitUntil("the API reads the jobs again", async () => (await listIds()).status === 200, 60_000);
    polling = false;
    await poll;

    assert.match(running.stdout(), /^postgres exited \(signal SIGKILL\) after [\d.]+ s; restarting in [\d.]+ s/m);
    const log = await readFile(path.join(running.home, "logs", "postgres.log"), "utf8");
    // Started again only once its own recovery has run.
    assert.match(
      log,
      /not properly shut down; automatic recovery in progress[\s\S]*database system is ready to accept connections/,
    );
    for (const answer of answers) {
      assert.ok(answer.status === 200 || answer.status === 503, `answered ${answer.status}: ${answer.body}`);
      if (answer.status === 503) {
        assert.equal(answer.retryAfter, "5");
        assert.match(JSON.parse(answer.body).message, /^the database is unavailable/);
      }
    }
    for (const line of running
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("postgres ")))
      console.log(line);
    const unavailable = answers.filter((a) => a.status === 503);
    const lastUnavailable = unavailable.at(-1)?.at ?? killedAt;
    console.log(
      `${answers.length} answers while PostgreSQL restarted, ${unavailable.length} of them 503; ` +
        `the last 503 ${((lastUnavailable - killedAt) / 1000).toFixed(1)} s after the SIGKILL`,
    );

    assert.ok((await listIds()).ids.includes(firstId), "the job created before the crash is still there");
    const second = await createJob();
    assert.equal(second.status, 200, await second.clone().text());
    assert.equal(up.child.exitCode, null, "up is still running");

    up.interrupt();
    assert.equal(await up.exited, 0, `${up.stdout()}\n${up.stderr()}`);
  },
);
