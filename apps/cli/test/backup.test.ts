import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, readdir, rm, stat, truncate } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import tar from "tar-stream";
import { createGunzip } from "node:zlib";
import { pipeline } from "node:stream/promises";
import { installedTables } from "@mixdown/db";
import { startTestStack, type TestStack } from "@mixdown/devstack";
import {
  createJobsOfEveryKind,
  form,
  kits,
  listEverything,
  sha256Of,
  waitEnded,
  waitModelReady,
  writeSineMixture,
  type KitsSession,
} from "../testing/kits-jobs.ts";
import { runCli } from "./run-cli.ts";
import { type RunningUp, startUp, waitUntil } from "./run-up.ts";

const ups: RunningUp[] = [];
const stacks: TestStack[] = [];
const work = await mkdtemp(path.join(os.tmpdir(), "mixdown-backup-test-"));
after(async () => {
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
  await Promise.all(stacks.map((s) => s.stop()));
  await rm(work, { recursive: true, force: true });
});

/** Every entry of an archive: name and size, in order. */
async function entriesOf(file: string): Promise<{ name: string; size: number }[]> {
  const extract = tar.extract();
  const reading = pipeline(createReadStream(file), ...(file.endsWith(".gz") ? [createGunzip()] : []), extract);
  const entries: { name: string; size: number }[] = [];
  for await (const entry of extract) {
    entries.push({ name: entry.header.name, size: entry.header.size ?? 0 });
    entry.resume();
  }
  await reading;
  return entries;
}

const archive = path.join(work, "embedded.tar.gz");
const mix = path.join(work, "mix.wav");
const longMix = path.join(work, "long.wav");
const speech = path.join(work, "speech.wav");
writeSineMixture(mix, 2);
writeSineMixture(longMix, 90);
execFileSync("espeak-ng", ["-w", speech, "Every voice has a story."]);

describe("mixdown backup and restore", () => {
  test(
    "an embedded install backed up with a job running, wiped and restored has every job, key, voice model and file back, finishes the running job and takes new ones",
    { timeout: 900_000 },
    async () => {
      const first = await startUp();
      ups.push(first);
      const session: KitsSession = { base: first.baseUrl, key: await first.key };
      const { jobs, voiceModelId } = await createJobsOfEveryKind(session, { mix, speech });
      for (const job of jobs) assert.equal((await waitEnded(session, job)).status, "success", `${job.path}/${job.id}`);
      const model = await waitModelReady(session, voiceModelId);
      const before = await listEverything(session);
      const separation = await kits(session, "GET", `/vocal-separations/${jobs[0]!.id}`);
      const files = [separation.vocalAudioFileUrl, model.imageUrl] as string[];
      const sums = await Promise.all(files.map((url) => sha256Of(url, session)));

      const running = await kits<{ id: number }>(session, "POST", "/vocal-separations", await formOf(longMix));
      await waitUntil(
        "the long separation has started",
        async () => ((await kits(session, "GET", `/vocal-separations/${running.id}`)).progress as number) > 0,
      );
      const home = { DATABASE_URL: "", MIXDOWN_HOME: first.home };
      const backup = await runCli(["backup", archive], home);
      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stdout, /Backed up \d+ rows of \d+ tables, \d+ stored files .* and the signing secret/);
      assert.equal((await kits(session, "GET", `/vocal-separations/${running.id}`)).status, "running");
      assert.equal(((await stat(archive)).mode & 0o777).toString(8), "600");

      const whileUp = await runCli(["restore", archive], home);
      assert.equal(whileUp.code, 2);
      assert.match(whileUp.stderr, /Mixdown is up here .*stop it/);

      first.interrupt();
      await first.exited;
      for (const entry of await readdir(first.home)) await rm(path.join(first.home, entry), { recursive: true, force: true });

      const restore = await runCli(["restore", archive], home);
      assert.equal(restore.code, 0, restore.stderr);
      assert.match(restore.stdout, /Restored \d+ rows of \d+ tables and \d+ stored files/);
      const again = await runCli(["restore", archive], home);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /This install is not empty:\n {2}rows in .*ApiKey.*\n {2}\d+ stored files\n.*--force/);

      const second = await startUp({}, 180_000, first.home);
      ups.push(second);
      await second.key;
      const restored: KitsSession = { base: second.baseUrl, key: session.key };
      const after = await listEverything(restored);
      // The long separation was made after `before` was read, and is running again.
      const separations = (lists: Record<string, unknown>) => {
        const { data } = lists["vocal-separations"] as { data: { id: number }[] };
        delete lists["vocal-separations"];
        return data.filter((job) => job.id !== running.id);
      };
      assert.deepEqual(separations(after), separations(before));
      assert.deepEqual(after, before);
      assert.deepEqual(
        await Promise.all(
          [
            (await kits(restored, "GET", `/vocal-separations/${jobs[0]!.id}`)).vocalAudioFileUrl,
            (await kits(restored, "GET", `/voice-models/${voiceModelId}`)).imageUrl,
          ].map((url) => sha256Of(url as string, restored)),
        ),
        sums,
      );
      // The job that was running when the backup was made runs again, to the end.
      assert.equal((await waitEnded(restored, { path: "vocal-separations", id: running.id })).status, "success");
      const fresh = await kits<{ id: number }>(restored, "POST", "/vocal-separations", await formOf(mix));
      assert.ok(fresh.id > running.id, `a new job's id (${fresh.id}) follows the restored ones`);
      assert.equal((await waitEnded(restored, { path: "vocal-separations", id: fresh.id })).status, "success");
      second.interrupt();
      await second.exited;
    },
  );

  test(
    "on S3 with DATABASE_URL (the compose layout) the same archive restores, backs up again with the same rows and files, and a truncated archive is refused with nothing of its rows kept",
    { timeout: 300_000 },
    async () => {
      const stack = await startTestStack({ storage: "s3" });
      stacks.push(stack);
      const restore = await runCli(["restore", archive], stack.env);
      assert.equal(restore.code, 0, restore.stderr);
      const copy = path.join(work, "s3.tar");
      const backup = await runCli(["backup", copy], stack.env);
      assert.equal(backup.code, 0, backup.stderr);
      const [original, again] = await Promise.all([entriesOf(archive), entriesOf(copy)]);
      const contents = (entries: { name: string; size: number }[]) =>
        entries
          // The install's own SIGNED_URL_SECRET is kept (DATABASE_URL's installs take theirs from the environment).
          .filter((e) => !e.name.startsWith("mixdown-backup") && e.name !== "secrets/SIGNED_URL_SECRET")
          .sort((a, b) => a.name.localeCompare(b.name));
      assert.deepEqual(contents(again), contents(original));

      const refused = await runCli(["restore", copy], stack.env);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /not empty/);
      await truncate(copy, Math.floor((await stat(copy)).size / 2));
      const cut = await runCli(["restore", "--force", copy], stack.env);
      assert.notEqual(cut.code, 0);
      assert.match(cut.stderr, /Unexpected end of data|truncated/i);
      assert.deepEqual(
        (await installedTables(stack.env.DATABASE_URL!)).filter((t) => t.hasRows),
        [],
        "nothing of a truncated archive's rows is kept",
      );
    },
  );
});

const formOf = (file: string) => form({ inputFile: { file } });
