/**
 * Records what a running Mixdown answers through the Kits API, and checks later that it still
 * answers it: scripts/compose-check.sh uses it for the compose stack's upgrade (state made by the
 * image of 2026-11-26, checked after today's image has migrated it) and its backup round trip
 * (state checked after `down -v` and a restore). Runs on Node 24 as it is (its type stripping), with
 * no install: it imports only Node's modules and `../testing/kits-jobs.ts`, the client the upgrade
 * fixture and the backup test use.
 *
 *   node apps/cli/scripts/kits-state.ts make BASE KEY MIX SPEECH OUT
 *       one job of every kind 2026-11-26 had (MIX: audio to separate and split, SPEECH: a recording
 *       to convert and build a voice from), waits until each has succeeded, writes their state
 *   node apps/cli/scripts/kits-state.ts capture BASE KEY OUT [PATH...]
 *       the state of every ended job and every voice model in the lists, and of PATH (`voice-blender/2`)
 *   node apps/cli/scripts/kits-state.ts check BASE KEY IN [--no-lists]
 *       exits 1, naming the first difference, unless every record, list and file of IN is answered as it was
 *
 * BASE is the API's origin (`http://localhost:8080`); KEY an API key of the caller whose jobs these are.
 */
import { readFile, writeFile } from "node:fs/promises";
import {
  assertStateKept,
  captureState,
  createJobsOfEveryKind,
  kits,
  LISTED_KINDS,
  waitEnded,
  waitModelReady,
  type KitsSession,
  type KitsState,
} from "../testing/kits-jobs.ts";

const [command, base, key, ...args] = process.argv.slice(2);
const usage =
  "usage: kits-state.ts make BASE KEY MIX SPEECH OUT | capture BASE KEY OUT [PATH...] | check BASE KEY IN [--no-lists]";
if (!command || !base || !key) throw new Error(usage);
const session: KitsSession = { base, key };

/** The path of every job and voice model the lists name that is no longer running. */
async function endedInLists(): Promise<string[]> {
  const paths: string[] = [];
  for (const kind of [...LISTED_KINDS, "voice-models"]) {
    const list = await kits<{ data: { id: number; status?: string; state?: string }[] }>(session, "GET", `/${kind}?perPage=100`);
    for (const item of list.data) {
      if (item.status !== "running" && item.state !== "pending") paths.push(`${kind}/${item.id}`);
    }
  }
  return paths;
}

switch (command) {
  case "make": {
    const [mix, speech, out] = args;
    if (!mix || !speech || !out) throw new Error(usage);
    const { jobs, voiceModelId } = await createJobsOfEveryKind(session, { mix, speech });
    for (const job of jobs) {
      const record = await waitEnded(session, job);
      if (record.status !== "success")
        throw new Error(`${job.path}/${job.id} ended ${String(record.status)}: ${String(record.errorMessage)}`);
    }
    await waitModelReady(session, voiceModelId);
    const paths = [...jobs.map((job) => `${job.path}/${job.id}`), `voice-models/${voiceModelId}`];
    const state = await captureState(session, paths);
    await writeFile(out, JSON.stringify(state, null, 2));
    console.log(`${paths.join(" ")}: ${Object.keys(state.files).length} files`);
    break;
  }
  case "capture": {
    const [out, ...extra] = args;
    if (!out) throw new Error(usage);
    const state = await captureState(session, [...(await endedInLists()), ...extra]);
    await writeFile(out, JSON.stringify(state, null, 2));
    console.log(`${Object.keys(state.records).length} records, ${Object.keys(state.files).length} files`);
    break;
  }
  case "check": {
    const [file, flag] = args;
    if (!file || (flag !== undefined && flag !== "--no-lists")) throw new Error(usage);
    const state = JSON.parse(await readFile(file, "utf8")) as KitsState;
    await assertStateKept(session, state, { lists: flag !== "--no-lists" });
    console.log(`${Object.keys(state.records).length} records and ${Object.keys(state.files).length} files as they were`);
    break;
  }
  default:
    throw new Error(usage);
}
