import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { form, kits, listEverything, sha256Of, waitEnded, withoutSignatures, type KitsSession } from "../testing/kits-jobs.ts";
import { repoRoot, runCli } from "./run-cli.ts";
import { type RunningUp, startUp } from "./run-up.ts";

/** Made by apps/cli/scripts/make-upgrade-fixture.ts with the commit it names (its README says how). */
const fixtureDir = path.join(repoRoot, "fixtures", "upgrade-2026-11-26");
const expected = JSON.parse(readFileSync(path.join(fixtureDir, "expected.json"), "utf8")) as {
  commit: string;
  key: string;
  records: Record<string, Record<string, unknown>>;
  lists: Record<string, unknown>;
  files: Record<string, string>;
};

const ups: RunningUp[] = [];
after(async () => {
  for (const up of ups) up.interrupt();
  await Promise.all(ups.map(async (up) => (await up.exited, await up.cleanUp())));
});

/** Every field the old API answered is answered today with the same value (fields added since aside). */
function assertKeeps(actual: unknown, old: unknown, where: string): void {
  if (old !== null && typeof old === "object") {
    assert.ok(actual !== null && typeof actual === "object", `${where}: ${JSON.stringify(actual)} is not an object`);
    if (Array.isArray(old)) {
      assert.ok(Array.isArray(actual), `${where} is no longer a list`);
      assert.equal(actual.length, old.length, `${where}: length`);
    }
    for (const [key, value] of Object.entries(old)) {
      assertKeeps((actual as Record<string, unknown>)[key], value, `${where}.${key}`);
    }
    return;
  }
  assert.equal(actual, old, where);
}

/** Every URL in a record, by its path. */
function urlsOf(value: unknown, into = new Map<string, string>()): Map<string, string> {
  if (typeof value === "string" && /^https?:\/\//.test(value)) into.set(new URL(value).pathname, value);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) urlsOf(v, into);
  return into;
}

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

      const current = new Map<string, Record<string, unknown>>();
      for (const [where, old] of Object.entries(expected.records)) {
        const record = await kits(session, "GET", `/${where}`);
        current.set(where, record);
        assertKeeps(withoutSignatures(record), old, where);
      }
      const lists = await listEverything(session);
      for (const [where, old] of Object.entries(expected.lists)) assertKeeps(lists[where], old, `GET /${where}`);

      const served = new Map<string, string>();
      for (const record of current.values()) urlsOf(record, served);
      for (const [file, sum] of Object.entries(expected.files)) {
        assert.ok(served.has(file), `${file} is still named by a record`);
        assert.equal(await sha256Of(served.get(file)!, session), sum, `${file} is served as it was stored`);
      }

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
