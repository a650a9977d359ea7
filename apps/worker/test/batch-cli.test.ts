import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort, testFilesDir } from "@mixdown/devstack";
import { getJson, makeAudio, startDeployment, zipNames, type Deployment } from "../testing/harness.ts";

// `./mixdown.sh batch` as a user runs it (the CLI's own entry point, in a process of its own)
// against a running API and worker.
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
let d: Deployment;
before(async () => {
  d = await startDeployment();
});
after(() => d?.stop());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], options: { interruptWhen?: RegExp; stdin?: string } = {}): Promise<Run> {
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "apps/cli/src/main.ts"), "batch", ...args], {
    cwd: repoRoot,
    env: { ...process.env, MIXDOWN_SERVER: d.baseUrl, MIXDOWN_API_KEY: d.key },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin.end(options.stdin ?? "");
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b));
  child.stderr.on("data", (b: Buffer) => {
    stderr += b;
    if (options.interruptWhen?.test(stderr)) {
      options.interruptWhen = undefined;
      child.kill("SIGINT");
    }
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

test("batch sends a folder's audio files as batches, follows them, downloads each zip; run again it follows the same batches; Ctrl-C leaves the jobs running", async () => {
  const take = await makeAudio("take.wav", ["-f", "lavfi", "-i", "sine=f=220:d=0.6", "-ac", "2", "-ar", "44100"]);
  const songs = await testFilesDir("batch-cli-");
  await mkdir(join(songs, "live"), { recursive: true });
  await copyFile(take, join(songs, "one.wav"));
  await copyFile(take, join(songs, "live", "two.wav"));
  await writeFile(join(songs, "notes.txt"), "not sent");
  // Named on the command line, a file is sent whatever it holds: the server refuses it.
  const broken = join(await testFilesDir("batch-cli-named-"), "broken.mp3");
  await writeFile(broken, "this is not audio");
  const out = await testFilesDir("batch-cli-out-");
  const args = [broken, songs, "--out", out, "--per-batch", "2"];

  // Two batches (--per-batch 2): [broken.mp3, live/two.wav], [one.wav]; interrupted once both exist.
  const first = await cli(args, {
    interruptWhen: /batch \d+: 1 job\(s\)\n[^]*batch \d+: 1 job\(s\)\n/,
  });
  assert.equal(first.code, 130, first.stderr);
  assert.match(first.stderr, /skipped notes\.txt: not wav, mp3, flac or webm by its content/);
  assert.match(first.stderr, /broken\.mp3 made no job: /);
  assert.match(first.stderr, /run the same command again to follow them/);
  const listed = await getJson(d, "batches");
  assert.equal(listed.data.length, 2);

  const second = await cli(args);
  assert.equal(second.code, 1, `${second.stderr}\n${second.stdout}`);
  assert.equal((second.stderr.match(/following it again/g) ?? []).length, 2, second.stderr);
  assert.doesNotMatch(second.stderr, /sending/);
  assert.equal((await getJson(d, "batches")).data.length, 2, "no new batch");
  const ids = listed.data.map((b: { id: number }) => b.id).sort();
  for (const id of ids) {
    const batch = await getJson(d, `batches/${id}`);
    assert.equal(batch.status, "success");
    assert.match(
      second.stdout,
      new RegExp(`batch ${id}: 1 succeeded, 0 failed, 0 cancelled, ${batch.rejected.length} rejected; .*batch-${id}\\.zip`),
    );
    const names = await zipNames(join(out, `batch-${id}.zip`));
    const folder = batch.jobs[0].fileName.replace(/\.wav$/, "");
    assert.ok(names.length >= 2 && names.every((n) => n.includes(folder)), names.join(", "));
    assert.ok(
      names.some((n) => n.endsWith("/vocals.wav")),
      names.join(", "),
    );
  }
  assert.deepEqual(
    (await readdir(out)).filter((n) => !n.startsWith(".")).sort(),
    ids.map((id: number) => `batch-${id}.zip`).sort(),
  );

  // Done batches are not downloaded again: the zips stay as they are.
  const before = await stat(join(out, `batch-${ids[0]}.zip`));
  const third = await cli(args);
  assert.equal(third.code, 1);
  assert.equal((await stat(join(out, `batch-${ids[0]}.zip`))).mtimeMs, before.mtimeMs);
  assert.equal((await readFile(join(out, `batch-${ids[0]}.zip`))).length, before.size);
});

test("batch --urls - sends the links read from stdin as one batch the server downloads, and says which link failed", async () => {
  const take = await readFile(
    await makeAudio("linked.wav", ["-f", "lavfi", "-i", "sine=f=330:d=0.6", "-ac", "2", "-ar", "44100"]),
  );
  const server = createServer((req, res) => {
    if (req.url === "/missing.wav") return res.writeHead(404).end();
    res.writeHead(200, { "content-length": take.length }).end(take);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const out = await testFilesDir("batch-cli-urls-");
    const list = `# songs to split\n${base}/one.wav\n\n${base}/two.wav\n${base}/missing.wav\n`;
    const run = await cli(["--urls", "-", "--out", out, "--poll-ms", "200"], { stdin: list });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /sending 0 file\(s\) and 3 link\(s\)/);
    assert.match(run.stderr, /missing\.wav: error: inputUrl: .*404/);
    assert.match(run.stdout, /^batch \d+: 2 succeeded, 1 failed, 0 cancelled, 0 rejected; /m);
    const zip = (await readdir(out)).find((f) => f.endsWith(".zip"))!;
    const folders = new Set((await zipNames(join(out, zip))).map((n) => n.split("/")[0]));
    assert.deepEqual([...folders].sort(), ["001-one", "002-two"]);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test("batch with a wrong key or no server says so and exits non-zero", async () => {
  const take = await makeAudio("take.wav", ["-f", "lavfi", "-i", "sine=f=220:d=0.3"]);
  const out = await testFilesDir("batch-cli-out-");
  const wrong = await cli([take, "--out", out, "--key", "mxd_wrong"]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /POST \/batches: 401/);
  const nothing = await cli([take, "--out", out, "--server", `http://127.0.0.1:${await freePort()}`]);
  assert.equal(nothing.code, 1);
  assert.match(nothing.stderr, /cannot reach the server: ECONNREFUSED/);
  const usage = await cli([take, "--kind", "karaoke"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--kind must be one of vocal-separation, stem-split/);
});
