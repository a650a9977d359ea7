import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { buildApp, type App } from "@mixdown/api";
import { loadConfig } from "@mixdown/config";
import {
  ApiKeyRepository,
  createPrismaClient,
  DashboardSignInRepository,
  registerVoiceCatalogue,
  type PrismaClient,
} from "@mixdown/db";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { catalogue as testCatalogue, files as mirrorFiles, mirror } from "@mixdown/model-catalogue/testing";
import { freePort, startTestStack, stopChild, type TestStack } from "@mixdown/devstack";
import { chromium, type Browser, type Page } from "playwright-core";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const webDir = fileURLToPath(new URL("../dist", import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Where the screenshots go: MIXDOWN_SCREENSHOTS_DIR, else a temporary directory (its path is logged). */
// Screenshots are kept only where MIXDOWN_SCREENSHOTS_DIR asks for them; else they go with the run.
const keepShots = Boolean(process.env.MIXDOWN_SCREENSHOTS_DIR);
const shotsDir = process.env.MIXDOWN_SCREENSHOTS_DIR ?? path.join(os.tmpdir(), `mixdown-dashboard-${process.pid}`);

let stack: TestStack;
let app: App;
let prisma: PrismaClient;
let worker: ChildProcess;
let browser: Browser;
let page: Page;
let baseUrl: string;
let scratch: string;
let song: string;
/** The catalogue models' origins and the voice models' links, on this machine (MIXDOWN_MODEL_MIRROR, a link's host). */
const fixture = (name: string) => fileURLToPath(new URL(`../../../packages/voice/test/fixtures/${name}`, import.meta.url));
const served = await mirror({
  ...mirrorFiles,
  "/voices/singer.onnx": await readFile(fixture("rvc-pth/rvc-v2-48k.onnx")),
  "/voices/singer.index": await readFile(fixture("rvc-index/ivf-flat-768.index")),
  // a song a batch of links names (the link test below)
  "/songs/linked%20take.wav": await readFile(path.join(repoRoot, "fixtures/real-files/wav-extensible-s24-48k-stereo.wav")),
});
/** A copy of the repository's models: the operator's install adds one. */
let modelsDir: string;
const problems: string[] = [];
/** The API calls the page made, for the failure report. */
const calls: string[] = [];

before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The dashboard's browser test needs Chromium at ${CHROMIUM}: install it (apt-get install chromium; ./mixdown.sh test does) or set CHROMIUM_PATH.`,
    );
  }
  if (!existsSync(path.join(webDir, "index.html")))
    throw new Error(`${webDir} is not built: run pnpm --filter @mixdown/web build.`);
  scratch = await mkdtemp(path.join(os.tmpdir(), "mixdown-web-e2e-"));
  await mkdir(shotsDir, { recursive: true });
  song = path.join(scratch, "mixture.wav");
  modelsDir = path.join(scratch, "models");
  const [started, port] = await Promise.all([
    startTestStack({ storage: "local" }),
    freePort(),
    makeMixture(song),
    cp(path.join(repoRoot, "models"), modelsDir, { recursive: true }),
  ]);
  stack = started;
  baseUrl = `http://127.0.0.1:${port}`;
  // The published catalogue and one more entry, served by the local mirror, that an operator installs.
  const published = JSON.parse(await readFile(path.join(repoRoot, "models/catalogue.json"), "utf8")) as { models: unknown[] };
  const extra = JSON.parse(await readFile(await testCatalogue(scratch), "utf8")) as { models: Array<{ name: string }> };
  published.models.push(extra.models.find((m) => m.name === "Test_Vocal")!);
  const catalogueFile = path.join(scratch, "catalogue.json");
  await writeFile(catalogueFile, JSON.stringify(published));
  // Local storage, as `mixdown up` runs it: signed file URLs on the page's own origin.
  const env: Record<string, string> = {
    ...stack.env,
    PORT: String(port),
    PUBLIC_BASE_URL: baseUrl,
    LOG_LEVEL: "warn",
    MODELS_DIR: modelsDir,
    MIXDOWN_MODEL_CATALOGUE: catalogueFile,
    MIXDOWN_MODEL_MIRROR: served.base,
    // The voice model links point at this machine (a documentation network stands in for the denied ones).
    WEBHOOK_DENIED_NETWORKS: "192.0.2.0/24",
  };
  app = await buildApp(loadConfig(env), { webDir });
  await app.listen({ host: "127.0.0.1", port });
  prisma = createPrismaClient(env.DATABASE_URL);
  await registerVoiceCatalogue(prisma, await catalogueRows(env.MODELS_DIR!));
  worker = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "apps/worker/src/main.ts")], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
  page = await browser.newPage({ viewport: { width: 1100, height: 900 }, acceptDownloads: true });
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("response", (response) => {
    if (response.request().method() !== "GET")
      calls.push(`${response.request().method()} ${response.url()} ${response.status()}`);
  });
  page.on("request", (request) => request.method() !== "GET" && calls.push(`sent ${request.method()} ${request.url()}`));
  page.on("requestfailed", (request) =>
    calls.push(`${request.method()} ${request.url()} failed: ${request.failure()?.errorText}`),
  );
  if (keepShots) console.log(`screenshots: ${shotsDir}`);
});

after(async () => {
  await browser?.close();
  if (worker) await stopChild(worker, "SIGTERM");
  await app?.close();
  await prisma?.$disconnect();
  await stack?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  if (!keepShots) await rm(shotsDir, { recursive: true, force: true });
});

/** A 3-second "song": a spoken phrase over two tones, 44.1 kHz stereo. */
async function makeMixture(file: string): Promise<void> {
  const voice = `${file}.voice.wav`;
  await run("espeak-ng", ["-v", "en+f3", "-s", "160", "-w", voice, "Mixdown splits the voice from the band."]);
  await run("ffmpeg", [
    ...["-v", "error", "-y", "-i", voice, "-f", "lavfi", "-i", "sine=f=110:d=3", "-f", "lavfi", "-i", "sine=f=165:d=3"],
    ...[
      "-filter_complex",
      "[0]aresample=44100,apad,atrim=0:3[v];[1][2]amix=inputs=2,volume=0.4[b];[v][b]amix=inputs=2,pan=stereo|c0=c0|c1=c0[o]",
    ],
    ...["-map", "[o]", "-ar", "44100", file],
  ]);
}

/** Same-document navigation (the hash) fires no load event: wait for the address itself; a form's error fails at once. */
async function waitForHash(pattern: RegExp): Promise<void> {
  const reached = await page
    .waitForFunction(
      (source) => new RegExp(source).test(location.hash) || document.querySelector('[role="alert"]') !== null,
      pattern.source,
      { timeout: 30_000 },
    )
    .then(() => page.evaluate(() => location.hash));
  if (!pattern.test(reached)) assert.fail(`the form failed: ${await page.locator('[role="alert"]').first().innerText()}`);
}

const shot = (name: string) =>
  page.screenshot({ path: path.join(shotsDir, `${name}.jpg`), type: "jpeg", quality: 70, fullPage: true });

/** Waits on the job page until the job ends, recording the progress it showed; fails unless it ends `success`. */
async function watchJob(): Promise<number[]> {
  const seen: number[] = [];
  const deadline = Date.now() + 240_000;
  for (;;) {
    const status = await page.locator(".job-status .status").first().textContent({ timeout: 10_000 });
    const progress = await page
      .locator(".job-status progress")
      .getAttribute("value", { timeout: 100 })
      .catch(() => null);
    if (progress !== null) seen.push(Number(progress));
    if (status && !status.startsWith("running")) {
      assert.equal(status.trim(), "success", await page.locator(".job-status").innerText());
      return seen;
    }
    assert.ok(
      Date.now() < deadline,
      "the job did not end within 240 s (the deadline is for a loaded machine: on an idle one each job takes seconds)",
    );
    await page.waitForTimeout(200);
  }
}

/** A new key (an operator's when asked), and this browser signed in with it through a one-time code as `up` prints it. */
async function signIn(name: string, options: { operator?: boolean } = {}): Promise<{ key: string; id: number; code: string }> {
  const { key, id } = await new ApiKeyRepository(prisma).createApiKey({ name, operator: options.operator ?? false });
  const { code } = await new DashboardSignInRepository(prisma).issue({ apiKeyId: id, apiKey: key });
  await page.goto(`${baseUrl}/#/sign-in/${code}`);
  await page.getByRole("heading", { name: "Jobs" }).waitFor();
  return { key, id, code };
}

/** On a failure: what the page showed and said, next to the screenshots. */
async function explain<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    await shot("failure").catch(() => undefined);
    const invalid = await page
      .evaluate(() => [...document.querySelectorAll(":invalid")].map((el) => el.getAttribute("name") ?? el.tagName))
      .catch(() => []);
    console.log(
      `failed at ${page.url()}; invalid fields: ${JSON.stringify(invalid)}; the page logged: ${JSON.stringify(problems)}; calls: ${calls.join("; ")}`,
    );
    throw error;
  }
}

test(
  "a browser signs in with the up link, separates a mixture, plays and downloads a stem, converts with an effect, blends two voices, speaks a text, analyses the mixture's key, tempo and loudness, repairs its vocal and masters it to a loudness target, with no console errors",
  { timeout: 900_000 },
  () =>
    explain(async () => {
      const apiKeys = new ApiKeyRepository(prisma);
      const { key, id, code } = await signIn("dashboard e2e");
      assert.equal(await page.evaluate(() => localStorage.getItem("mixdown.apiKey")), key);
      assert.ok(!page.url().includes(code), "the used code is gone from the address bar");

      // Separation: upload, watch the progress to the end, play a stem, download its lossless file.
      await page.getByRole("link", { name: "New job" }).click();
      await page.getByText(/Accepted: wav, webm, mp3 or flac; max \d+ MB/).waitFor();
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      // Every progress value the page renders, and every GET it makes, while the job runs.
      await page.evaluate(() => {
        const seen: number[] = [];
        Object.assign(window, { progressShown: seen });
        new MutationObserver(() => {
          const bar = document.querySelector(".job-status progress");
          if (bar) seen.push(Number(bar.getAttribute("value")));
        }).observe(document.body, { subtree: true, childList: true, attributes: true });
      });
      const reads: string[] = [];
      const onRead = (request: { method(): string; url(): string }) => {
        if (request.method() === "GET") reads.push(new URL(request.url()).pathname);
      };
      page.on("request", onRead);
      await page.getByRole("button", { name: "Start vocal separation" }).click();
      await waitForHash(/#\/jobs\/vocal-separations\/\d+$/);
      const jobPath = `/api/kits/v1/${new URL(page.url()).hash.slice("#/jobs/".length)}`;
      const progress = await watchJob();
      page.off("request", onRead);
      assert.ok(progress.every((p) => p >= 0 && p <= 100));
      // Pushed, not polled: the record is read once, its changes come on its event stream.
      assert.deepEqual(
        reads.filter((read) => read.startsWith(jobPath)),
        [jobPath, `${jobPath}/events`],
        "one read of the job, then its event stream",
      );
      const shown = await page.evaluate(() => (window as unknown as { progressShown: number[] }).progressShown);
      assert.ok(
        shown.some((p) => p > 1 && p < 100),
        `the worker's progress reached the page while the job ran: ${JSON.stringify(shown)}`,
      );
      await page.locator(".track").nth(1).waitFor();
      await page.locator(".wave canvas, .wave div").first().waitFor({ state: "attached" });
      await page.getByRole("button", { name: "Play all together" }).click();
      await page.waitForFunction(() => {
        const vocals = document.querySelector<HTMLAudioElement>('audio[data-title="vocals"]');
        return vocals !== null && !vocals.paused && vocals.currentTime > 0;
      });
      await page.getByRole("button", { name: "Solo" }).first().click();
      // The page mutes the other tracks after its state update, not within the click: wait for it.
      await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('audio[data-title="backing"]')?.muted === true);
      await page.getByRole("button", { name: "Pause all" }).click();
      await shot("separation");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("link", { name: "Download lossless" }).first().click(),
      ]);
      const saved = path.join(scratch, download.suggestedFilename() || "vocals");
      await download.saveAs(saved);
      const head = (await readFile(saved)).subarray(0, 4).toString("latin1");
      assert.ok(
        head === "RIFF" || head === "fLaC",
        `the lossless download is a wav or flac file (starts ${JSON.stringify(head)})`,
      );

      // Conversion with a post effect, heard against its input (A/B).
      await page.goto(`${baseUrl}/#/new/voice-conversions`);
      await page.locator('input[name="voiceModelId"]').first().check();
      await page.locator('input[name="soundFile"]').setInputFiles(song);
      await page.locator('input[name="post-reverb"]').check();
      await page.locator('input[name="post-reverb-room_size"]').fill("0.8");
      // The fields' help arrives from /docs/json: once it is in, the button stops moving.
      await page.getByText("Accepted: wav, mp3 or flac; max 100 MB").waitFor();
      await page.getByText(/Accepted: Optional backing track/).waitFor();
      assert.equal(await page.locator('input[name="post-reverb-room_size"]').inputValue(), "0.8");
      // Leave the field before the full-page screenshot: the screenshot resizes the viewport, and Chromium then
      // scrolls back to a still-focused field when focus next leaves it, i.e. on the mousedown of the click below,
      // which moves the button from under the pointer. A person's browser does not resize like that.
      await page.keyboard.press("Tab");
      await shot("conversion-form");
      await page.getByRole("button", { name: "Start voice conversion" }).click();
      await waitForHash(/#\/jobs\/voice-conversions\/\d+$/);
      await watchJob();
      await page.getByRole("button", { name: /^A\/B/ }).waitFor();
      await page.locator('audio[data-title="converted voice"]').waitFor({ state: "attached" });
      await shot("conversion");

      // Blend of two catalogue voices, the second's share computed live.
      await page.goto(`${baseUrl}/#/new/voice-blender`);
      await page.locator('input[name="model1"]').first().check();
      await page.locator('input[name="model2"]').first().check();
      await page.locator('input[name="share1"]').fill("0.3");
      assert.equal((await page.getByTestId("last-share").locator("output").textContent())?.trim(), "0.7");
      await page.locator('input[name="title"]').fill("Dashboard blend");
      await page.getByRole("button", { name: "Start blend" }).click();
      await waitForHash(/#\/jobs\/voice-blender\/\d+$/);
      await watchJob();
      await page.getByText("Dashboard blend").waitFor();
      await shot("blend");

      // Text to speech: a text in a catalogue voice, the limit stated from the server's own document.
      await page.goto(`${baseUrl}/#/new/tts`);
      await page.locator('input[name="voiceModelId"]').first().check();
      await page
        .locator('textarea[name="inputTtsText"]')
        .fill("Mixdown reads this sentence aloud. Then it sings it in your voice.");
      await page.getByText(/at most \d+ characters \(MAX_TTS_TEXT_CHARS\)/).waitFor();
      await page.locator('input[name="language"]').fill("en-gb");
      await page.keyboard.press("Tab");
      await shot("tts-form");
      await page.getByRole("button", { name: "Speak it" }).click();
      await waitForHash(/#\/jobs\/tts\/\d+$/);
      await watchJob();
      await page.locator('audio[data-title="spoken voice"]').waitFor({ state: "attached" });
      await page.getByText("Mixdown reads this sentence aloud.", { exact: false }).waitFor();
      await page.getByText("spoken by espeak-ng in en-gb", { exact: false }).waitFor();
      await shot("tts");

      // Audio analysis: the mixture's key, tempo and loudness on the job's page.
      await page.goto(`${baseUrl}/#/new/audio-analyses`);
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.getByRole("button", { name: "Analyse it" }).click();
      await waitForHash(/#\/jobs\/audio-analyses\/\d+$/);
      await watchJob();
      const facts = await page.getByRole("definition").allInnerTexts();
      const terms = await page.getByRole("term").allInnerTexts();
      assert.deepEqual(terms, ["Key", "Tempo", "Integrated loudness", "Loudness range", "True peak", "Duration"]);
      assert.match(facts[0]!, /^(C|C#|D|Eb|E|F|F#|G|Ab|A|Bb|B) (major|minor) \(confidence 0\.\d\d\)$/);
      assert.match(facts[1]!, /^(\d+\.\d BPM \(confidence \d\.\d\d of 5\.32\), \d+ beats|none found)$/);
      assert.match(facts[2]!, /^-\d+\.\d LUFS$/);
      assert.match(facts[3]!, /^\d+\.\d LU$/);
      assert.match(facts[4]!, /^-?\d+\.\d dBTP$/);
      assert.equal(facts[5], "3.00 s");
      await shot("analysis");

      // Vocal repair: the mixture's vocal isolated, then denoised; the repaired vocal plays on the job's page.
      await page.goto(`${baseUrl}/#/new/vocal-repairs`);
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.getByLabel("The file is a mix: isolate its vocal first").check();
      await page.getByRole("button", { name: "Repair it" }).click();
      await waitForHash(/#\/jobs\/vocal-repairs\/\d+$/);
      await watchJob();
      await page.locator('audio[data-title="repaired vocal"]').waitFor({ state: "attached" });
      await page.getByText("vocal isolated, then denoise (models: vocals).", { exact: false }).waitFor();
      await shot("repair");
      // Mastering: the mixture to a loudness target; its loudness before and after, before/after players.
      await page.goto(`${baseUrl}/#/new/masterings`);
      await page.locator('input[name="targetFile"]').setInputFiles(song);
      await page.getByLabel(/a loudness target/).check();
      await page.getByRole("button", { name: "Master it" }).click();
      await waitForHash(/#\/jobs\/masterings\/\d+$/);
      await watchJob();
      const loudness = page.getByRole("table", { name: "Loudness before and after" });
      await loudness.waitFor();
      assert.match(await loudness.innerText(), /Integrated loudness\s+-\d+\.\d LUFS\s+-1\d\.\d LUFS/);
      await page.locator('audio[data-title="before"]').waitFor({ state: "attached" });
      await page.locator('audio[data-title="after (master)"]').waitFor({ state: "attached" });
      await shot("mastering");
      // Harmony: the mixture's vocal isolated, a third above it in C major; the lead, the lead with its harmony and the harmony play.
      await page.goto(`${baseUrl}/#/new/harmonies`);
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.locator('input[name="key"]').fill("C major");
      await page.locator('select[name="interval"]').selectOption("third");
      await page.getByLabel("The file is a mix: isolate its vocal first").check();
      await page.getByRole("button", { name: "Harmonise it" }).click();
      await waitForHash(/#\/jobs\/harmonies\/\d+$/);
      await watchJob();
      await page
        .getByText(/a third above in C major \(given\), the vocal isolated from the mix first; \d+ notes \(models: vocals\)\./)
        .waitFor();
      for (const title of ["before (lead)", "after (with harmony)", "harmony alone"])
        await page.locator(`audio[data-title="${title}"]`).waitFor({ state: "attached" });
      await shot("harmony");

      await page.getByRole("link", { name: "Voice models" }).click();
      await page.getByText("Dashboard blend").waitFor();
      await shot("voices");
      // The model catalogue: nothing of it is installed in the repository's models, so each row shows its command.
      await page.getByRole("link", { name: "Models", exact: true }).click();
      await page.getByText("./mixdown.sh models pull htdemucs_ft").waitFor();
      assert.equal(await page.locator("table.catalogue tbody tr").count(), await page.locator("code.install").count());
      await shot("models");
      // A blend started by a script, not this browser, is listed too (the API's GET /voice-blender).
      const api = (route: string, init: RequestInit = {}) =>
        fetch(`${baseUrl}/api/kits/v1${route}`, {
          ...init,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        }).then((r) => r.json());
      const voices = (await api("/voice-models?perPage=2")).data as Array<{ id: number }>;
      const scripted = await api("/voice-blender", {
        method: "POST",
        body: JSON.stringify({ modelId1: voices[0]!.id, modelId2: voices[1]!.id, alpha: 0.5, title: "Scripted blend" }),
      });
      await page.getByRole("link", { name: "Jobs", exact: true }).click();
      await page.getByRole("link", { name: `Voice blend #${scripted.id}` }).waitFor();
      await page.getByRole("link", { name: /^Text to speech #\d+$/ }).waitFor();
      await page.getByRole("link", { name: /^Key, tempo and loudness #\d+$/ }).waitFor();
      await page.getByRole("link", { name: /^Vocal repair #\d+$/ }).waitFor();
      await page.getByRole("link", { name: /^Mastering #\d+$/ }).waitFor();
      await page.getByRole("link", { name: /^Harmony #\d+$/ }).waitFor();
      assert.equal(await page.locator("table.jobs tbody tr").count(), 9);
      await shot("jobs");

      // Usage: this key's month per kind (each job once, its audio's seconds) against the quota set on it.
      await apiKeys.setMonthlyQuota(id, 60);
      await page.getByRole("link", { name: "Usage", exact: true }).click();
      await page
        .getByTestId("usage-quota")
        .getByText(/^Monthly quota 60 min: /)
        .waitFor();
      const usage = (await api("/usage")) as { kinds: Array<{ kind: string; seconds: number; jobs: number }> };
      const counted = (kind: string) => usage.kinds.find((k) => k.kind === kind)!;
      // The mixture is 3 s long: the separation and the conversion count its length; TTS its spoken output's.
      assert.deepEqual(counted("vocal_separation"), { kind: "vocal_separation", seconds: 3, jobs: 1 });
      assert.deepEqual(counted("voice_conversion"), { kind: "voice_conversion", seconds: 3, jobs: 1 });
      assert.equal(counted("tts").jobs, 1);
      assert.ok(counted("tts").seconds > 1, `the spoken text counts its length (${counted("tts").seconds} s)`);
      assert.deepEqual(counted("audio_analysis"), { kind: "audio_analysis", seconds: 3, jobs: 1 });
      assert.deepEqual(counted("vocal_repair"), { kind: "vocal_repair", seconds: 3, jobs: 1 });
      for (const kind of ["vocal_separation", "voice_conversion", "tts", "audio_analysis", "vocal_repair"]) {
        const { seconds, jobs } = counted(kind);
        assert.deepEqual(await page.locator(`tr[data-kind="${kind}"] td`).allInnerTexts(), [
          `${seconds.toFixed(1)} s`,
          String(jobs),
        ]);
      }
      await shot("usage");
      await page.locator('input[name="month"]').fill("2026-01");
      await page
        .getByTestId("usage-summary")
        .getByText(/in 2026-01: 0\.0 s of audio, 0 jobs\./)
        .waitFor();
      await page.getByRole("link", { name: "Jobs", exact: true }).click();
      await page.getByRole("link", { name: /^Text to speech #\d+$/ }).waitFor();
      await page.setViewportSize({ width: 390, height: 800 });
      await shot("jobs-phone");
      assert.equal(
        await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth),
        true,
        "no sideways scrolling at phone width",
      );

      assert.deepEqual(problems, []);
    }),
);

test(
  "Delete on a job's page and on a voice model asks first: dismissed, nothing goes; accepted, the job or model is gone from the API and the page",
  { timeout: 300_000 },
  () =>
    explain(async () => {
      await page.setViewportSize({ width: 1280, height: 900 });
      const { key } = await signIn("dashboard deletes");
      const api = (route: string, init: RequestInit = {}) =>
        fetch(`${baseUrl}/api/kits/v1${route}`, {
          ...init,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        });
      const voices = ((await (await api("/voice-models?perPage=2")).json()) as { data: Array<{ id: number }> }).data;
      const blend = async (title: string) =>
        (await (
          await api("/voice-blender", {
            method: "POST",
            body: JSON.stringify({ modelId1: voices[0]!.id, modelId2: voices[1]!.id, alpha: 0.5, title }),
          })
        ).json()) as { id: number; outputModelId: number };

      // A job: its page's Delete, dismissed then accepted.
      const first = await blend("Blend to delete");
      await page.goto(`${baseUrl}/#/jobs/voice-blender/${first.id}`);
      await watchJob();
      const questions: string[] = [];
      page.once("dialog", (dialog) => {
        questions.push(dialog.message());
        void dialog.dismiss();
      });
      await page.getByRole("button", { name: "Delete", exact: true }).click();
      await page.waitForFunction(() => true);
      assert.equal((await api(`/voice-blender/${first.id}`)).status, 200, "dismissed: still there");
      page.once("dialog", (dialog) => {
        questions.push(dialog.message());
        void dialog.accept();
      });
      await page.getByRole("button", { name: "Delete", exact: true }).click();
      await waitForHash(/^#\/jobs$/);
      assert.match(questions[0]!, new RegExp(`^Delete Voice blend #${first.id} and all its files for good\\?`));
      assert.equal((await api(`/voice-blender/${first.id}`)).status, 404);
      assert.equal((await api(`/voice-models/${first.outputModelId}`)).status, 404, "its output model went with it");
      await page.getByRole("heading", { name: "Jobs" }).waitFor();
      assert.equal(await page.getByRole("link", { name: `Voice blend #${first.id}` }).count(), 0);

      // A voice model: the Voices page's Delete, on the caller's own models only.
      const second = await blend("Model to delete");
      await page.goto(`${baseUrl}/#/jobs/voice-blender/${second.id}`);
      await watchJob();
      await page.getByRole("link", { name: "Voice models" }).click();
      await page.getByRole("heading", { name: "Voice models" }).waitFor();
      // the list comes after the heading: its own model's button says it is there
      await page.getByRole("button", { name: "Delete Model to delete" }).waitFor();
      assert.equal(await page.getByRole("button", { name: /^Delete / }).count(), 1, "only the caller's own model has one");
      page.once("dialog", (dialog) => void dialog.accept());
      await shot("voices-delete");
      await page.getByRole("button", { name: "Delete Model to delete" }).click();
      await page.getByText("Model to delete").waitFor({ state: "detached" });
      assert.equal((await api(`/voice-models/${second.outputModelId}`)).status, 404);
      assert.equal((await api(`/voice-blender/${second.id}`)).status, 404, "the blend that made it went with it");

      assert.deepEqual(problems, []);
    }),
);

test(
  "a browser runs a pipeline of its own steps (separate, then repair the vocal), watches each step's job, and plays the input against the result and each step's outputs",
  { timeout: 600_000 },
  () =>
    explain(async () => {
      await page.setViewportSize({ width: 1280, height: 900 });
      const { key } = await signIn("dashboard pipeline");
      await page.goto(`${baseUrl}/#/new/pipelines`);
      // The presets come from GET /pipeline-presets, each with its chain.
      await page
        .getByText(/separate → convert → recombine/)
        .first()
        .waitFor();
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.getByLabel("my own steps").check();
      // The form starts with separate, then repair (denoise): the chain a vocal cleanup runs.
      assert.equal(await page.locator('select[name="step-0"]').inputValue(), "separate");
      assert.equal(await page.locator('select[name="step-1"]').inputValue(), "repair");
      await page.getByRole("button", { name: "Run the pipeline" }).click();
      await waitForHash(/#\/jobs\/pipelines\/\d+$/);
      const id = Number(new URL(page.url()).hash.split("/").pop());
      await watchJob();
      const steps = page.getByRole("list", { name: "Steps" });
      await steps.getByRole("link", { name: /^Vocal separation #\d+$/ }).waitFor();
      await steps.getByRole("link", { name: /^Vocal repair #\d+$/ }).waitFor();
      assert.deepEqual(await steps.locator(".status").allInnerTexts(), ["success", "success"]);
      // Before and after: the upload and the last step's repaired vocal; then each step's own outputs.
      await page.locator('audio[data-title="before"]').waitFor({ state: "attached" });
      await page.locator('audio[data-title="after (repaired vocal)"]').waitFor({ state: "attached" });
      await page.getByText(/^Step 2: repair \(Vocal repair #\d+\)$/).click();
      await page.locator('audio[data-title="repaired vocal"]').waitFor({ state: "attached" });
      await shot("pipeline");
      // What the page showed is what the API says.
      const record = (await fetch(`${baseUrl}/api/kits/v1/pipelines/${id}`, { headers: { authorization: `Bearer ${key}` } }).then(
        (r) => r.json(),
      )) as { status: string; steps: Array<{ step: string; status: string; options: Record<string, unknown> }> };
      assert.equal(record.status, "success");
      assert.deepEqual(
        record.steps.map((s) => [s.step, s.status, s.options]),
        [
          ["separate", "success", { models: [], ensemble: null }],
          ["repair", "success", { steps: ["denoise"] }],
        ],
      );
      await page.getByRole("link", { name: "Jobs", exact: true }).click();
      await page.getByRole("link", { name: `Pipeline #${id}` }).waitFor();
      assert.deepEqual(problems, []);
    }),
);

test(
  "an operator imports a voice model from its link with its index link, installs a catalogue model from the Models page watching its progress, separates with an ensemble of it and another model, and sees every caller's usage",
  { timeout: 900_000 },
  () =>
    explain(async () => {
      await page.setViewportSize({ width: 1280, height: 900 });
      const { key, id } = await signIn("dashboard operator", { operator: true });
      const api = (route: string) =>
        fetch(`${baseUrl}/api/kits/v1${route}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json());

      // A voice model from a link, with its index's link: pending until the worker has fetched both, then ready.
      await page.getByRole("link", { name: "Voice models" }).click();
      await page.getByRole("heading", { name: "Voice models" }).waitFor();
      await page.getByRole("radio", { name: /a link to the model/ }).check();
      await page.locator('input[name="title"]').fill("Linked singer");
      await page.locator('input[name="modelUrl"]').fill(`${served.base}/voices/singer.onnx`);
      await page.locator('input[name="indexUrl"]').fill(`${served.base}/voices/singer.index`);
      await page.getByRole("button", { name: "Import", exact: true }).click();
      await page.getByText(/Importing “Linked singer” \(#\d+\) from its link/).waitFor();
      const card = page.locator("li.model", { hasText: "Linked singer" });
      await card.locator(".status.ready").waitFor({ timeout: 120_000 });
      const linked = ((await api("/voice-models?myModels=true")).data as Array<{ id: number; title: string }>).find(
        (m) => m.title === "Linked singer",
      )!;
      const row = await prisma.voiceModel.findUniqueOrThrow({ where: { id: linked.id } });
      assert.equal(row.state, "ready");
      assert.equal(
        (row.metadata as { indexKey?: string }).indexKey,
        `voice-models/${linked.id}/model.index`,
        "its index came too",
      );
      assert.ok(served.seen.some((s) => s.path === "/voices/singer.index"));
      await shot("voices-link");

      // The Models page: an operator's Install, its progress polled until the model is installed.
      await page.getByRole("link", { name: "Models", exact: true }).click();
      const entry = page.locator('tr[data-model="Test_Vocal"]');
      await entry.getByRole("button", { name: "Install Test_Vocal" }).click();
      const progress: number[] = [];
      const deadline = Date.now() + 240_000;
      while ((await entry.locator("td").last().innerText()).trim() !== "yes") {
        const value = await entry
          .locator("progress")
          .getAttribute("value", { timeout: 100 })
          .catch(() => null);
        if (value !== null) progress.push(Number(value));
        assert.ok(Date.now() < deadline, `the install did not end within 240 s: ${await entry.innerText()}`);
        await page.waitForTimeout(100);
      }
      assert.ok(progress.length > 0, "the install's progress was shown while it ran");
      assert.ok(
        progress.every((p, i) => p >= 0 && p <= 100 && (i === 0 || p >= progress[i - 1]!)),
        `progress only goes up: ${progress.join(",")}`,
      );
      assert.ok(
        served.seen.some((s) => s.path === "/uvr/Test_Vocal.onnx"),
        "downloaded through the mirror",
      );
      const installs = (await api("/model-installs")).data as Array<{ name: string; status: string; summary: string }>;
      assert.deepEqual(
        installs.map((i) => [i.name, i.status]),
        [["Test_Vocal", "success"]],
      );
      await shot("models-installed");

      // A vocal separation by an ensemble of the default vocals model and the one just installed.
      await page.getByRole("link", { name: "New job" }).click();
      await page.locator('input[name="model"][value="vocals"]').check();
      await page.locator('input[name="model"][value="Test_Vocal"]').check();
      await page.locator('select[name="ensemble"]').selectOption("max_mag");
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.getByText(/Accepted: wav, webm, mp3 or flac; max \d+ MB/).waitFor();
      await shot("ensemble-form");
      await page.getByRole("button", { name: "Start vocal separation" }).click();
      await waitForHash(/#\/jobs\/vocal-separations\/\d+$/);
      await watchJob();
      await page.getByText("Model: vocals,Test_Vocal (ensemble, max_mag).", { exact: false }).waitFor();
      const jobId = Number(/(\d+)$/.exec(await page.evaluate(() => location.hash))![1]);
      const job = await api(`/vocal-separations/${jobId}`);
      assert.deepEqual([job.status, job.model, job.ensemble], ["success", "vocals,Test_Vocal", "max_mag"]);
      await shot("ensemble");

      // Output control: a stem split written as 16-bit FLAC at 22.05 kHz, drums and bass only.
      await page.goto(`${baseUrl}/#/new/stem-splits`);
      await page.locator('input[name="inputFile"]').setInputFiles(song);
      await page.getByText("Output files").click();
      await page.locator('select[name="outputFormat"]').selectOption("flac");
      assert.equal(
        await page.locator('select[name="sampleFormat"] option[value="f32"]').isDisabled(),
        true,
        "no 32-bit float in FLAC",
      );
      await page.locator('select[name="sampleFormat"]').selectOption("s16");
      await page.locator('input[name="compressionLevel"]').fill("8");
      await page.locator('select[name="sampleRate"]').selectOption("22050");
      await page.locator('input[name="stems"]').fill("drums,bass");
      await page.getByRole("button", { name: "Start stem split" }).click();
      await waitForHash(/#\/jobs\/stem-splits\/\d+$/);
      await watchJob();
      await page.getByText("Lossless files: FLAC 16-bit, level 8, 22050 Hz; stems drums, bass.", { exact: false }).waitFor();
      assert.deepEqual(await page.locator(".track audio").evaluateAll((a) => a.map((e) => e.getAttribute("data-title"))), [
        "drums",
        "bass",
      ]);
      const splitId = Number(/(\d+)$/.exec(await page.evaluate(() => location.hash))![1]);
      const split = await api(`/stem-splits/${splitId}`);
      assert.deepEqual(split.output, {
        format: "flac",
        sampleFormat: "s16",
        compressionLevel: 8,
        sampleRate: 22050,
        stems: ["drums", "bass"],
      });

      // Usage: an operator's page lists every caller's keys too.
      await page.getByRole("link", { name: "Usage", exact: true }).click();
      await page.getByRole("heading", { name: /^Every caller in \d{4}-\d{2}$/ }).waitFor();
      const others = await new ApiKeyRepository(prisma).listApiKeys();
      for (const other of others) await page.locator(`tr[data-key="${other.id}"]`).waitFor();
      assert.match(await page.locator(`tr[data-key="${id}"]`).innerText(), /dashboard operator/);
      await shot("usage-operator");

      assert.deepEqual(problems, []);
    }),
);

test(
  "links typed in a separation form make one batch the server downloads: the job of a link that is not there fails alone",
  { timeout: 600_000 },
  () =>
    explain(async () => {
      await signIn("dashboard batch of links");
      await page.goto(`${baseUrl}/#/new/vocal-separations`);
      await page.getByText("Links to audio files").click();
      await page
        .getByLabel("Links, one per line")
        .fill(`${served.base}/songs/linked%20take.wav\n\n${served.base}/songs/not-there.wav\n`);
      await page.getByRole("button", { name: "Start a batch of 2" }).click();
      await waitForHash(/#\/batches\/\d+$/);
      const batchId = Number(new URL(page.url()).hash.split("/").pop());
      await page.getByRole("heading", { name: `Batch ${batchId}: vocal separation of 2 files` }).waitFor();
      await page.getByText("2 of 2 ended: 1 succeeded, 1 failed").waitFor({ timeout: 300_000 });
      await page.getByRole("cell", { name: "linked take.wav" }).waitFor();
      await page.getByText(/inputUrl: .*not-there\.wav.*404/).waitFor();
      await page.getByRole("button", { name: "Download zip" }).waitFor();
      await shot("batch-links");
      assert.ok(served.seen.some((s) => s.path === "/songs/linked%20take.wav"));
      assert.deepEqual(problems, []);
    }),
);

test(
  "many files dropped on a separation form make one batch: its page follows the jobs to the end, names the file that is not audio, and downloads the zip",
  { timeout: 600_000 },
  () =>
    explain(async () => {
      await signIn("dashboard batch");
      const first = path.join(scratch, "first take.wav");
      const second = path.join(scratch, "second take.wav");
      const notes = path.join(scratch, "notes.mp3");
      await cp(song, first);
      await cp(song, second);
      await writeFile(notes, "these are not audio");
      await page.goto(`${baseUrl}/#/new/vocal-separations`);
      await page.locator('input[name="inputFile"]').setInputFiles([first, second, notes]);
      await page.getByText("3 files, ").waitFor();
      await page.getByRole("button", { name: "Start a batch of 3" }).click();
      await waitForHash(/#\/batches\/\d+$/);
      const batchId = Number(new URL(page.url()).hash.split("/").pop());
      await page.getByRole("heading", { name: `Batch ${batchId}: vocal separation of 2 files` }).waitFor();
      await page.getByText(/notes\.mp3: /).waitFor();
      // Followed to the end without a reload: the zip's button appears once both jobs have ended.
      await page.getByRole("button", { name: "Download zip" }).waitFor({ timeout: 300_000 });
      await page.getByText("2 of 2 ended: 2 succeeded").waitFor();
      await shot("batch");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download zip" }).click(),
      ]);
      assert.equal(download.suggestedFilename(), `batch-${batchId}.zip`);
      const saved = path.join(scratch, `batch-${batchId}.zip`);
      await download.saveAs(saved);
      const bytes = await readFile(saved);
      assert.equal(bytes.subarray(0, 4).toString("latin1"), "PK\u0003\u0004", "the download is a zip");
      // Each input's folder is in it (a zip's central directory names its entries in the clear).
      for (const name of ["first take", "second take"]) assert.ok(bytes.includes(`${name}/vocals`), `${name}/vocals in the zip`);
      // The list of batches links to it, and each job links to its own page.
      await page.getByRole("link", { name: "Batches" }).click();
      await page.getByRole("link", { name: `Vocal separation batch ${batchId}` }).click();
      await page
        .getByRole("link", { name: /^Vocal separation \d+$/ })
        .first()
        .click();
      await waitForHash(/#\/jobs\/vocal-separations\/\d+$/);
      assert.deepEqual(problems, []);
    }),
);
