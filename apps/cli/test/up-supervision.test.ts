import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { after, describe, test } from "node:test";
import { freePort } from "@mixdown/devstack";
import { type RunningUp, startUp, waitUntil } from "./run-up.ts";

const run = promisify(execFile);
// Enough jobs for one to be under way at each of the three kills, and short ones: the test is about
// what the kills do to the queue, not about the model's speed (12 jobs of 8 s took 4-5 minutes).
const JOBS = 8;

interface JobView {
  id: number;
  status: string;
  progress: number;
  vocalAudioFileUrl: string | null;
  backingAudioFileUrl: string | null;
  lossyVocalAudioFileUrl: string | null;
}

let up: RunningUp | undefined;
/** The API is polled until the test ends; a test that failed half-way must not leave the loop running (the file would never exit). */
let polling = true;
after(async () => {
  polling = false;
  up?.interrupt();
  await up?.exited;
  await up?.cleanUp();
});

describe("mixdown up keeps the service up", () => {
  test(
    `finishes ${JOBS} jobs exactly once through two worker SIGKILLs and a redis-server SIGKILL, the API answering throughout`,
    // Its waits add up to more than 5 minutes on a slow machine; a timeout only ends the test, the after hook the rest.
    { timeout: 600_000 },
    async () => {
      const workerHealthPort = await freePort();
      up = await startUp({ WORKER_HEALTH_PORT: String(workerHealthPort) });
      const running = up;
      const key = await running.key;
      const auth = { authorization: `Bearer ${key}` };
      const song = path.join(running.home, "song.wav");
      await run("ffmpeg", [
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        "sine=f=220:d=4",
        "-f",
        "lavfi",
        "-i",
        "anoisesrc=d=4:c=pink:a=0.05",
        "-filter_complex",
        "[0][1]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=c0",
        "-ar",
        "44100",
        song,
      ]);

      const t0 = Date.now();
      const timeline: string[] = [];
      const note = (event: string) => timeline.push(`${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${event}`);

      // The API is asked every 250 ms, the whole time: liveness, readiness and the job list.
      const answers: Array<{ url: string; status: number; ms: number }> = [];
      const unanswered: string[] = [];
      const lastStatus = new Map<number, string>();
      const successes = new Map<number, number>();
      let jobs: JobView[] = [];
      const poll = (async () => {
        while (polling) {
          for (const url of ["/healthz", "/readyz", "/api/kits/v1/vocal-separations?perPage=100"]) {
            const asked = Date.now();
            try {
              const res = await fetch(`${running.baseUrl}${url}`, { headers: auth, signal: AbortSignal.timeout(10_000) });
              const body = await res.text();
              answers.push({ url, status: res.status, ms: Date.now() - asked });
              if (url === "/readyz" && res.status !== 200) note(`GET /readyz ${res.status}: ${body}`);
              if (!url.startsWith("/api")) continue;
              jobs = (JSON.parse(body) as { data: JobView[] }).data;
              for (const job of jobs) {
                if (job.status === "success" && lastStatus.get(job.id) !== "success") {
                  successes.set(job.id, (successes.get(job.id) ?? 0) + 1);
                  note(`job ${job.id} success`);
                }
                lastStatus.set(job.id, job.status);
              }
            } catch (error) {
              unanswered.push(
                `${((Date.now() - t0) / 1000).toFixed(1)} s ${url}: ${(error as Error).cause ?? (error as Error).message}`,
              );
            }
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      })();

      const ids: number[] = [];
      const bytes = await readFile(song);
      for (let i = 0; i < JOBS; i++) {
        const form = new FormData();
        form.append("inputFile", new Blob([bytes]), "song.wav");
        const res = await fetch(`${running.baseUrl}/api/kits/v1/vocal-separations`, {
          method: "POST",
          body: form,
          headers: auth,
        });
        assert.equal(res.status, 200, await res.clone().text());
        ids.push(((await res.json()) as { id: number }).id);
      }
      note(`${JOBS} jobs submitted`);

      const succeeded = () => jobs.filter((j) => j.status === "success").length;
      const underWay = () => jobs.some((j) => j.status === "running" && j.progress > 0);
      const workerReady = async () => {
        try {
          return (await fetch(`http://127.0.0.1:${workerHealthPort}/healthz`)).ok;
        } catch {
          return false;
        }
      };
      const kill = async (name: "worker" | "redis", ready: { what: string; check: () => Promise<boolean> }) => {
        const pid = running.pid(name)!;
        const inFlight = jobs.filter((j) => j.status === "running" && j.progress > 0).map((j) => `job ${j.id} at ${j.progress}%`);
        process.kill(pid, "SIGKILL");
        note(`SIGKILL ${name} (pid ${pid}) while ${inFlight.join(", ") || "no job shows progress"}`);
        await waitUntil(`${name} is restarted`, () => running.pid(name) !== undefined && running.pid(name) !== pid, 60_000);
        note(`${name} restarted (pid ${running.pid(name)})`);
        await waitUntil(ready.what, ready.check, 120_000);
        note(ready.what);
      };

      await waitUntil("a job is under way", underWay);
      await kill("worker", { what: "worker health port answers", check: workerReady });
      await waitUntil("three jobs succeeded", () => succeeded() >= 3, 180_000);
      await kill("redis", {
        what: "GET /readyz 200 (the API reaches redis again)",
        check: async () => (await fetch(`${running.baseUrl}/readyz`).catch(() => undefined))?.status === 200,
      });
      await waitUntil("six jobs succeeded and another is under way", () => succeeded() >= 6 && underWay(), 180_000);
      await kill("worker", { what: "worker health port answers", check: workerReady });
      await waitUntil("every job ended", () => jobs.length === JOBS && jobs.every((j) => j.status !== "running"), 180_000);
      note(`every job ended`);
      polling = false;
      await poll;

      console.log(`mixdown up supervision timeline (t = 0 at the first job's submission):\n${timeline.join("\n")}`);
      const byUrl = new Map<string, number[]>();
      for (const a of answers) {
        const kind = `${a.url.split("?")[0]} ${a.status}`;
        byUrl.set(kind, [...(byUrl.get(kind) ?? []), a.ms]);
      }
      const summary = [...byUrl].map(([kind, ms]) => `${kind}: ${ms.length} (slowest ${Math.max(...ms)} ms)`);
      console.log(`API answers: ${summary.join(", ")}; unanswered: ${unanswered.length}`);

      assert.deepEqual(unanswered, [], "every request got an HTTP answer");
      for (const { url, status } of answers) {
        if (url === "/readyz") assert.ok(status === 200 || status === 503, `readyz ${status}`);
        else assert.equal(status, 200, url);
      }
      assert.ok(answers.length > 100, `the API was asked throughout (${answers.length} answers)`);

      // One row per job, each `success` once, with its own outputs once.
      assert.deepEqual(
        jobs.map((j) => j.id).sort((a, b) => a - b),
        ids,
      );
      for (const job of jobs) {
        assert.equal(job.status, "success", `job ${job.id}`);
        assert.equal(successes.get(job.id), 1, `job ${job.id} became success once`);
        for (const url of [job.vocalAudioFileUrl, job.backingAudioFileUrl, job.lossyVocalAudioFileUrl]) {
          assert.ok(url, `job ${job.id} has its outputs`);
          assert.equal((await fetch(url)).status, 200, url);
        }
        const stored = readdirSync(path.join(running.home, "storage", "outputs", "vocal-separation", String(job.id))).sort();
        // the whole vocal and backing, and the vocal split's lead, harmony and reverb, each as wav and mp3
        const outputs = ["backing", "harmony", "lead", "reverb", "vocals"].flatMap((f) => [`${f}.mp3`, `${f}.wav`]);
        assert.deepEqual(stored, outputs, `job ${job.id}'s stored outputs`);
      }

      const restarts = running.stdout().match(/^(worker|redis) exited \(signal SIGKILL\).*restarting in.*$/gm) ?? [];
      assert.deepEqual(
        restarts.map((r) => r.split(" ")[0]),
        ["worker", "redis", "worker"],
        running.stdout(),
      );

      running.interrupt();
      assert.equal(await running.exited, 0, `${running.stdout()}\n${running.stderr()}`);
      console.log(`wall time of the scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    },
  );
});
