import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { assertStateKept, form, kits, waitEnded, type KitsSession, type KitsState } from "../testing/kits-jobs.ts";
import { repoRoot, runCli } from "./run-cli.ts";
import { type RunningUp, startUp } from "./run-up.ts";

/** Made by apps/cli/scripts/make-upgrade-fixture.ts with the commit it names (its README says how). */
const fixtureDir = path.join(repoRoot, "fixtures", "upgrade-2026-11-26");
const expected = JSON.parse(readFileSync(path.join(fixtureDir, "expected.json"), "utf8")) as KitsState & {
  commit: string;
  key: string;
};

const ups: RunningUp[] = [];
after(async () => {
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
});

describe("an install of 2026-11-26 upgraded to this checkout", () => {
  test(
    `restored from the state its own up made (${expected.commit.slice(0, 10)}), today's code migrates it, presents every old record as it was, accepts its key, serves its files and runs a new job`,
    { timeout: 600_000 },
    async () => {
      const home = await mkdtemp(path.join(os.tmpdir(), "mixdown-upgrade-test-"));
      await chmod(home, 0o755);
      const restore = await runCli(["restore", path.join(fixtureDir, "state.tar.gz")], {
        DATABASE_URL: "",
        MIXDOWN_HOME: home,
      });
      assert.equal(restore.code, 0, restore.stderr);
      assert.match(
        restore.stdout,
        /Migrations newer than the backup applied after its rows: .*20261127120000_separation_model_list/,
      );

      const up = await startUp({}, 180_000, home);
      ups.push(up);
      await up.key;
      const session: KitsSession = { base: up.baseUrl, key: expected.key };

      await assertStateKept(session, expected);

      const separation = await kits<{ id: number }>(session, "POST", "/vocal-separations", await form({
        inputFile: { file: path.join(repoRoot, "fixtures/real-files/flac-stream-8k-mono.flac") },
      })); // prettier-ignore
      assert.equal((await waitEnded(session, { path: "vocal-separations", id: separation.id })).status, "success");
      up.interrupt();
      await up.exited;
      await rm(home, { recursive: true, force: true });
    },
  );
});
