/**
 * Makes `fixtures/upgrade-2026-11-26/`: the state an install of Mixdown as of 2026-11-26 (commit
 * OLD_COMMIT, the day's last) holds after one job of every kind it had, made by that commit's own
 * `up` and API, and captured with today's `mixdown backup`. The upgrade test
 * (`apps/cli/test/upgrade.test.ts`) restores it into a fresh install and runs today's code on it.
 *
 *   node --import tsx apps/cli/scripts/make-upgrade-fixture.ts   (takes a few minutes: its own pnpm install)
 *
 * Steps: `git archive OLD_COMMIT` into a temporary directory; `pnpm install --frozen-lockfile` and
 * `pnpm db:generate` there; that checkout's `up` on a fresh MIXDOWN_HOME; through its API, a vocal
 * separation and a stem split of a 1-second 16 kHz mixture, a conversion of and a native voice built
 * from a 1-second espeak-ng recording, a TTS, a blend, each with a webhook to a local receiver; when all
 * have ended, every record as the old API answered it and the sha256 of some served files go into
 * `expected.json`, and `backup` writes `state.tar.gz`; then the old `up` is stopped and the
 * temporary directory removed.
 */
import { execFileSync, spawn } from "node:child_process";
import { createServer } from "node:http";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@mixdown/devstack";
import {
  createJobsOfEveryKind,
  kits,
  LISTED_KINDS,
  listEverything,
  sha256Of,
  waitEnded,
  waitModelReady,
  withoutSignatures,
  writeSineMixture,
} from "../testing/kits-jobs.ts";

const OLD_COMMIT = "91b37a22e1b0db5b6776cee345fad023b4bcd314";
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const fixtureDir = path.join(repoRoot, "fixtures", "upgrade-2026-11-26");

const commit = execFileSync("git", ["rev-parse", `${OLD_COMMIT}^{commit}`], { cwd: repoRoot, encoding: "utf8" }).trim();
const work = await mkdtemp(path.join(os.tmpdir(), "mixdown-upgrade-fixture-"));
await chmod(work, 0o755);
const old = path.join(work, "old");
const home = path.join(work, "home");
await mkdir(old);
const run = (command: string, args: string[], cwd: string, env: Record<string, string> = {}) =>
  execFileSync(command, args, { cwd, stdio: "inherit", env: { ...process.env, ...env } });

const receiver = createServer((request, response) => {
  request.resume();
  request.on("end", () => response.writeHead(204).end());
});
let up: ReturnType<typeof spawn> | undefined;
try {
  console.log(`Checking out ${commit} into ${old}…`);
  execFileSync("bash", ["-c", `git archive ${commit} | tar -x -C ${JSON.stringify(old)}`], { cwd: repoRoot, stdio: "inherit" });
  run("pnpm", ["install", "--frozen-lockfile", "--prefer-offline"], old, { ONNXRUNTIME_NODE_INSTALL: "skip" });
  run("pnpm", ["db:generate"], old);

  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const webhookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  let output = "";
  up = spawn(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "up"], {
    cwd: old,
    env: { ...process.env, DATABASE_URL: "", MIXDOWN_HOME: home, PORT: String(port), LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  up.stdout!.on("data", (chunk) => (output += chunk));
  const key = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the old up did not start:\n${output}`)), 300_000);
    up!.stdout!.on("data", () => {
      const match = /A fresh API key[^\n]*\n(mxd_\S+)\n/.exec(output);
      if (match) (clearTimeout(timer), resolve(match[1]!));
    });
    up!.once("exit", (code) => reject(new Error(`the old up exited with ${code}:\n${output}`)));
  });
  const session = { base: `http://127.0.0.1:${port}`, key };

  const mix = path.join(work, "mix.wav");
  const speech = path.join(work, "speech.wav");
  // Short and mono at 16 kHz (outputs keep the input's rate and length): the fixture stays small.
  writeSineMixture(mix, 1, 1, 16000);
  run("espeak-ng", ["-w", speech, "Kept for a year."], work);
  const { jobs, voiceModelId } = await createJobsOfEveryKind(session, { mix, speech }, webhookUrl);
  const records: Record<string, unknown> = {};
  for (const job of jobs) {
    const record = await waitEnded(session, job);
    if (record.status !== "success")
      throw new Error(`${job.path}/${job.id} ended ${String(record.status)}: ${String(record.errorMessage)}`);
    records[`${job.path}/${job.id}`] = withoutSignatures(record);
  }
  const built = await waitModelReady(session, voiceModelId);
  records[`voice-models/${voiceModelId}`] = withoutSignatures(built);
  // Files served by the old install, compared byte for byte after the upgrade.
  const separation = await kits(session, "GET", `/${jobs[0]!.path}/${jobs[0]!.id}`);
  const conversion = await kits(session, "GET", `/${jobs[2]!.path}/${jobs[2]!.id}`);
  const files: Record<string, string> = {};
  for (const url of [separation.vocalAudioFileUrl, conversion.lossyOutputFileUrl, built.imageUrl] as string[]) {
    files[new URL(url).pathname] = await sha256Of(url, session);
  }
  const lists = await listEverything(session);

  await rm(fixtureDir, { recursive: true, force: true });
  await mkdir(fixtureDir, { recursive: true });
  run(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "backup", path.join(fixtureDir, "state.tar.gz")], repoRoot, {
    DATABASE_URL: "",
    MIXDOWN_HOME: home,
  });
  const expected = {
    commit,
    madeAt: new Date().toISOString(),
    key,
    jobs,
    voiceModelId,
    listedKinds: LISTED_KINDS,
    records,
    lists,
    files,
  };
  await writeFile(path.join(fixtureDir, "expected.json"), `${JSON.stringify(expected, null, 2)}\n`);
  console.log(`Wrote ${fixtureDir}: state.tar.gz and expected.json, from ${commit}.`);
} finally {
  if (up && up.exitCode === null) {
    process.kill(-up.pid!, "SIGINT");
    await new Promise((resolve) => up!.once("exit", resolve));
  }
  receiver.close();
  await rm(work, { recursive: true, force: true });
}
