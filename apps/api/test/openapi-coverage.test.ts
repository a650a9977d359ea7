// The document is the truth of the wire, for every route: each (operation, status) pair the served
// OpenAPI document declares is driven here for real (Postgres, Redis and local-disk storage started
// by the harness; the outage statuses by stopping Postgres), and every answer is checked by the
// harness's WireCheck (support/wire-check.ts: openapi-backend's validator on the body and the
// declared headers, the Content-Type against the declared media types). The test fails when the
// document declares a pair no driver below provokes (so a route or a status cannot be added without
// coverage), when a driver does not get the status it is for, and when an answer differs from the
// document.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import swagger from "@fastify/swagger";
import { ApiKeyRepository, createJobTables, DashboardSignInRepository } from "@mixdown/db";
import Fastify, { type FastifySchema } from "fastify";
import { Type } from "typebox";
import { documentedObject } from "../src/http/openapi-layout.ts";
import { alwaysSent } from "../src/http/schemas.ts";
import { audio, multipart, startHarness, type FilePart, type Harness } from "./helpers.ts";
import { WireCheck } from "./support/wire-check.ts";

const METRICS_TOKEN = "coverage-metrics-token-0123456789";
/** The upload limits set here (separations, conversions): the fixtures fit, the oversized part does not. */
const UPLOAD_LIMIT = 200_000;
const KITS = "/api/kits/v1";
/** An id no row has (the largest the id parameter takes). */
const ABSENT_ID = 2147483647;

/**
 * Pairs that are declared but not driven here, each with its reason. A pair added here must say
 * why it cannot be provoked for real.
 */
const NOT_DRIVEN: Record<string, string> = {
  "createModelInstall 409":
    "an installed catalogue model needs a real install (a worker and a mirror): model-installs.test.ts drives it, its answers checked against the document there",
  "streamCallerEvents 200":
    "the caller-wide event stream never ends, and an injected request is answered at its end; job-events.test.ts reads it over a socket",
};

interface Request {
  method: "GET" | "POST" | "DELETE";
  url: string;
  headers?: Record<string, string>;
  payload?: string | Buffer | object;
}
/** Provokes one answer; what it returns is sent and must be answered with the pair's status. */
type Driver = () => Promise<Request> | Request;

let h: Harness;
let me: Awaited<ReturnType<Harness["newCaller"]>>;
/** A key allowed one read and one write a minute: its second request of a kind is a 429. */
let limited: Awaited<ReturnType<Harness["newCaller"]>>;
let publicModel: number;
let myModel: number;
let pendingModel: number;
/** An operator's key (`keys create --operator`): the model installs' routes take only such keys. */
let operator: Record<string, string>;

before(async () => {
  h = await startHarness("local", {
    METRICS_TOKEN,
    MAX_SEPARATION_UPLOAD_BYTES: String(UPLOAD_LIMIT),
    MAX_CONVERSION_UPLOAD_BYTES: String(UPLOAD_LIMIT),
  });
  me = await h.newCaller("coverage");
  limited = await h.newCaller("limited", { readsPerMinute: 1, writesPerMinute: 1 });
  publicModel = (await h.createModel({ title: "Public Alto", imageUrl: "https://img.example/alto.png" })).id;
  myModel = (await h.createModel({ title: "My Tenor", ownerId: me.callerId, demoUrl: "https://img.example/tenor.mp3" })).id;
  pendingModel = (await h.createModel({ title: "Unfinished", ownerId: me.callerId, state: "pending" })).id;
  const op = await new ApiKeyRepository(h.prisma).createApiKey({ name: "operator", operator: true });
  operator = { authorization: `Bearer ${op.key}` };
});
after(async () => {
  await h?.stack.postgres.resume();
  await h?.stop();
});

async function send(req: Request, auth: Record<string, string> = me.auth) {
  return h.app.inject({ method: req.method, url: req.url, headers: { ...auth, ...req.headers }, payload: req.payload });
}

/** Sends a request and returns its JSON answer, which must have `status`. */
async function made(req: Request, status: number): Promise<{ id: number; outputModelId?: number }> {
  const res = await send(req);
  assert.equal(res.statusCode, status, `${req.method} ${req.url}: ${res.body}`);
  return res.json();
}

const file = (name: string, content: Buffer, filename = "take.wav"): FilePart => ({ name, filename, content });
const notAudio = () => Buffer.from("this is a text file, not a recording\n".repeat(20));
const oversized = () => Buffer.alloc(UPLOAD_LIMIT + 100_000, 1);
const json = (body: unknown) => ({ headers: { "content-type": "application/json" }, payload: JSON.stringify(body) });
/** A JSON body over the service's 1 MiB JSON limit. */
const bigJson = () => json({ title: "x".repeat(2 * 1024 * 1024) });
/** The request with the operator's key instead of the caller's. */
const asOperator = (req: Request): Request => ({ ...req, headers: { ...req.headers, ...operator } });
const withKey = (req: Request, key: string): Request => ({ ...req, headers: { ...req.headers, "idempotency-key": key } });

/** The create of each job kind: a valid request (two distinct ones, for the Idempotency-Key conflict). */
interface JobKind {
  path: string;
  created: number;
  create(variant: number): Promise<Request>;
}
/** A separation kind's create: its one upload, a little longer for each variant. */
const separation = (path: string): JobKind => ({
  path: `${KITS}/${path}`,
  created: 200,
  async create(variant) {
    return {
      method: "POST",
      url: `${KITS}/${path}`,
      ...multipart({}, [file("inputFile", await audio("wav", 0.5 + variant / 10))]),
    };
  },
});
const jobKinds: Record<string, JobKind> = {
  VocalSeparation: separation("vocal-separations"),
  StemSplit: separation("stem-splits"),
  // its upload follows a separation's rules
  AudioAnalysis: separation("audio-analyses"),
  // its upload follows a separation's rules; a denoise needs no separation model
  VocalRepair: {
    path: `${KITS}/vocal-repairs`,
    created: 200,
    async create(variant) {
      return {
        method: "POST",
        url: `${KITS}/vocal-repairs`,
        ...multipart({ steps: "denoise" }, [file("inputFile", await audio("wav", 0.5 + variant / 10))]),
      };
    },
  },
  // its upload follows a separation's rules; the key is found by the worker when none is given
  Harmony: separation("harmonies"),
  VoiceConversion: {
    path: `${KITS}/voice-conversions`,
    created: 201,
    async create(variant) {
      return {
        method: "POST",
        url: `${KITS}/voice-conversions`,
        ...multipart({ voiceModelId: myModel, pitchShift: variant }, [file("soundFile", await audio("wav"))]),
      };
    },
  },
  TextToSpeechJob: {
    path: `${KITS}/tts`,
    created: 201,
    create: async (variant) => ({
      method: "POST",
      url: `${KITS}/tts`,
      ...json({ voiceModelId: myModel, inputTtsText: `Take ${variant}.` }),
    }),
  },
  Mastering: {
    path: `${KITS}/masterings`,
    created: 201,
    async create(variant) {
      return {
        method: "POST",
        url: `${KITS}/masterings`,
        ...multipart({ targetLufs: -14 - variant }, [file("targetFile", await audio("wav"))]),
      };
    },
  },
  Pipeline: {
    path: `${KITS}/pipelines`,
    created: 201,
    async create(variant) {
      return {
        method: "POST",
        url: `${KITS}/pipelines`,
        ...multipart({ preset: "cover", voiceModelId: myModel }, [file("inputFile", await audio("wav", 0.5 + variant / 10))]),
      };
    },
  },
  VoiceBlend: {
    path: `${KITS}/voice-blender`,
    created: 201,
    create: async (variant) => ({
      method: "POST",
      url: `${KITS}/voice-blender`,
      ...json({ modelId1: publicModel, modelId2: myModel, alpha: 0.1 + variant / 20 }),
    }),
  },
};

/** The drivers of each operation's statuses, by operationId; 401, 404, 429 and 503 also have generic ones below. */
function drivers(): Record<string, Partial<Record<number, Driver>>> {
  const out: Record<string, Partial<Record<number, Driver>>> = {};
  for (const [kind, k] of Object.entries(jobKinds)) {
    const createId = `create${kind}`;
    const key = `coverage-${kind}`;
    out[createId] = {
      [k.created]: () => k.create(0),
      // The same Idempotency-Key, first with one request (and its repeat, replayed), then with another.
      409: async () => {
        const first = withKey(await k.create(1), key);
        await made(first, k.created);
        const replay = await send(first);
        assert.equal(replay.statusCode, k.created, replay.body);
        assert.equal(replay.headers["idempotent-replayed"], "true");
        return withKey(await k.create(2), key);
      },
      422: () =>
        kind === "VoiceBlend" || kind === "TextToSpeechJob"
          ? { method: "POST", url: k.path, ...json({}) }
          : { method: "POST", url: k.path, ...multipart({}, []) },
      400: () =>
        kind === "VoiceBlend"
          ? { method: "POST", url: k.path, headers: { "content-type": "application/json" }, payload: "{modelId1:" }
          : { method: "POST", url: k.path, headers: { "content-type": "text/plain" }, payload: "not a form" },
    };
    if (
      kind === "VocalSeparation" ||
      kind === "StemSplit" ||
      kind === "AudioAnalysis" ||
      kind === "Harmony" ||
      kind === "Pipeline"
    ) {
      out[createId][413] = () => ({ method: "POST", url: k.path, ...multipart({}, [file("inputFile", oversized())]) });
      // a pipeline's chain is checked before its upload: a preset makes it one
      const chain: Record<string, string> = kind === "Pipeline" ? { preset: "karaoke" } : {};
      out[createId][415] = () => ({ method: "POST", url: k.path, ...multipart(chain, [file("inputFile", notAudio())]) });
    } else if (kind === "VocalRepair") {
      out[createId][413] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ steps: "denoise" }, [file("inputFile", oversized())]),
      });
      out[createId][415] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ steps: "denoise" }, [file("inputFile", notAudio())]),
      });
    } else if (kind === "Mastering") {
      out[createId][413] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ targetLufs: -14 }, [file("targetFile", oversized())]),
      });
      out[createId][415] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ targetLufs: -14 }, [file("targetFile", notAudio())]),
      });
    } else if (kind === "VoiceConversion") {
      out[createId][413] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ voiceModelId: myModel }, [file("soundFile", oversized())]),
      });
      out[createId][415] = () => ({
        method: "POST",
        url: k.path,
        ...multipart({ voiceModelId: myModel }, [file("soundFile", notAudio())]),
      });
    } else {
      out[createId][413] = () => ({ method: "POST", url: k.path, ...bigJson() });
      if (kind === "TextToSpeechJob") {
        out[createId][415] = () => ({
          method: "POST",
          url: k.path,
          headers: { "content-type": "application/xml" },
          payload: "<tts/>",
        });
      }
    }
    out[`get${kind}`] = {
      200: async () => ({ method: "GET", url: `${k.path}/${(await made(await k.create(3), k.created)).id}` }),
    };
    out[kind === "AudioAnalysis" ? "listAudioAnalyses" : kind === "Harmony" ? "listHarmonies" : `list${kind}s`] = {
      200: () => ({ method: "GET", url: `${k.path}?order=desc&page=1&perPage=5` }),
      422: () => ({ method: "GET", url: `${k.path}?perPage=0` }),
    };
    out[`cancel${kind}`] = {
      200: async () => ({ method: "POST", url: `${k.path}/${(await made(await k.create(4), k.created)).id}/cancel` }),
      // A job that has ended (here: cancelled) cannot be cancelled again.
      409: async () => {
        const { id } = await made(await k.create(5), k.created);
        await made({ method: "POST", url: `${k.path}/${id}/cancel` }, 200);
        return { method: "POST", url: `${k.path}/${id}/cancel` };
      },
    };
    out[`delete${kind}`] = {
      204: async () => ({ method: "DELETE", url: `${k.path}/${(await made(await k.create(6), k.created)).id}` }),
    };
    /** A job of the kind, ended (cancelled): its event stream sends its status and record, then ends. */
    const ended = async (variant: number) => {
      const { id } = await made(await k.create(variant), k.created);
      await made({ method: "POST", url: `${k.path}/${id}/cancel` }, 200);
      return `${k.path}/${id}/events`;
    };
    out[`stream${kind}Events`] = {
      200: async () => ({ method: "GET", url: await ended(8) }),
      // Resumed from the record's own event id: nothing is left to send.
      204: async () => {
        const url = await ended(9);
        const ids = [...(await send({ method: "GET", url })).body.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!);
        return { method: "GET", url, headers: { "last-event-id": ids.at(-1)! } };
      },
    };
  }
  // A blend whose output model a running conversion uses cannot be deleted.
  out.deleteVoiceBlend![409] = async () => {
    const blend = await made(await jobKinds.VoiceBlend!.create(7), 201);
    await h.prisma.voiceModel.update({ where: { id: blend.outputModelId! }, data: { state: "ready" } });
    await made(
      {
        method: "POST",
        url: `${KITS}/voice-conversions`,
        ...multipart({ voiceModelId: blend.outputModelId! }, [file("soundFile", await audio("wav"))]),
      },
      201,
    );
    return { method: "DELETE", url: `${KITS}/voice-blender/${blend.id}` };
  };

  const models = `${KITS}/voice-models`;
  const installs = `${KITS}/model-installs`;
  const link = (n: number) => ({
    modelUrl: `https://huggingface.co/someone/voices/resolve/main/Singer${n}.zip`,
    metadata: JSON.stringify({ title: `Singer ${n}` }),
  });
  Object.assign(out, {
    createVoiceModel: {
      201: () => ({ method: "POST", url: models, ...json(link(0)) }),
      400: () => ({ method: "POST", url: models, headers: { "content-type": "text/plain" }, payload: "not a form" }),
      409: async () => {
        await made(withKey({ method: "POST", url: models, ...json(link(1)) }, "coverage-model"), 201);
        return withKey({ method: "POST", url: models, ...json(link(2)) }, "coverage-model");
      },
      413: () => ({ method: "POST", url: models, ...bigJson() }),
      415: () => ({ method: "POST", url: models, headers: { "content-type": "application/xml" }, payload: "<model/>" }),
      422: () => ({ method: "POST", url: models, ...json({}) }),
    },
    listVoiceModels: {
      200: () => ({ method: "GET", url: `${models}?myModels=true` }),
      422: () => ({ method: "GET", url: `${models}?perPage=0` }),
    },
    getVoiceModel: { 200: () => ({ method: "GET", url: `${models}/${publicModel}` }) },
    getVoiceModelImage: {
      302: () => ({ method: "GET", url: `${models}/${publicModel}/image` }),
      409: () => ({ method: "GET", url: `${models}/${pendingModel}/image` }),
    },
    getVoiceModelDemo: {
      302: () => ({ method: "GET", url: `${models}/${myModel}/demo` }),
      409: () => ({ method: "GET", url: `${models}/${pendingModel}/demo` }),
    },
    deleteVoiceModel: {
      204: async () => ({
        method: "DELETE",
        url: `${models}/${(await h.createModel({ title: "Gone", ownerId: me.callerId })).id}`,
      }),
      // Imported from a link, still being built.
      409: async () => ({
        method: "DELETE",
        url: `${models}/${(await made({ method: "POST", url: models, ...json(link(3)) }, 201)).id}`,
      }),
    },
    getUsage: {
      200: () => ({ method: "GET", url: `${KITS}/usage` }),
      // every caller's usage is an operator's to read
      403: () => ({ method: "GET", url: `${KITS}/usage?all=true` }),
      422: () => ({ method: "GET", url: `${KITS}/usage?month=last-month` }),
    },
    // No worker runs here: an install stays running once queued.
    createModelInstall: {
      202: () => asOperator({ method: "POST", url: installs, ...json({ name: "htdemucs" }) }),
      // the same name again while its install runs: that install
      200: async () => {
        const req = asOperator({ method: "POST", url: installs, ...json({ name: "htdemucs_ft" }) });
        await made(req, 202);
        return req;
      },
      400: () =>
        asOperator({ method: "POST", url: installs, headers: { "content-type": "application/json" }, payload: "{name:" }),
      403: () => ({ method: "POST", url: installs, ...json({ name: "htdemucs" }) }),
      422: () => asOperator({ method: "POST", url: installs, ...json({ name: "no_such_model" }) }),
    },
    listModelInstalls: {
      200: () => asOperator({ method: "GET", url: installs }),
      403: () => ({ method: "GET", url: installs }),
      422: () => asOperator({ method: "GET", url: `${installs}?perPage=0` }),
    },
    getModelInstall: {
      200: async () => {
        const { id } = await made(asOperator({ method: "POST", url: installs, ...json({ name: "htdemucs_6s" }) }), 202);
        return asOperator({ method: "GET", url: `${installs}/${id}` });
      },
      403: () => ({ method: "GET", url: `${installs}/1` }),
      404: () => asOperator({ method: "GET", url: `${installs}/${ABSENT_ID}` }),
    },
    listSeparationModels: { 200: () => ({ method: "GET", url: `${KITS}/separation-models` }) },
    listPipelinePresets: { 200: () => ({ method: "GET", url: `${KITS}/pipeline-presets` }) },
    listModelCatalogue: { 200: () => ({ method: "GET", url: `${KITS}/model-catalogue` }) },
    getHealth: { 200: () => ({ method: "GET", url: "/healthz" }) },
    getReadiness: { 200: () => ({ method: "GET", url: "/readyz" }) },
    getMetrics: {
      200: () => ({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      401: () => ({ method: "GET", url: "/metrics", headers: { authorization: "Bearer wrong-metrics-token-0123456789" } }),
    },
    signInToDashboard: {
      200: async () => {
        const code = (await new DashboardSignInRepository(h.prisma).issue({ apiKeyId: me.apiKeyId, apiKey: me.key })).code;
        return { method: "POST", url: "/dashboard/sign-in", ...json({ code }) };
      },
      401: () => ({ method: "POST", url: "/dashboard/sign-in", ...json({ code: "no-such-code" }) }),
      422: () => ({ method: "POST", url: "/dashboard/sign-in", ...json({}) }),
    },
    downloadFile: fileDrivers(),
    ...batchDrivers(),
  });
  return out;
}

/** /batches: a batch of two files, its reads, cancel, delete and zip (its jobs ended here as a worker ends them). */
function batchDrivers(): Record<string, Partial<Record<number, Driver>>> {
  const batches = `${KITS}/batches`;
  const create = async (variant: number, fields: Record<string, string> = { kind: "vocal-separation" }): Promise<Request> => ({
    method: "POST",
    url: batches,
    ...multipart(fields, [
      file("files", await audio("wav", 0.5 + variant / 10), "one.wav"),
      file("files", await audio("wav", 0.6 + variant / 10), "two.wav"),
    ]),
  });
  const batch = async (variant: number) => (await made(await create(variant), 200)) as { id: number; jobs?: unknown };
  /** A batch whose jobs have ended, one of them with a stored output. */
  const ended = async (variant: number) => {
    const { id } = await batch(variant);
    const jobs = await h.prisma.separationJob.findMany({ where: { batchId: id }, orderBy: { id: "asc" } });
    const key = `outputs/vocal-separation/${jobs[0]!.id}/vocals.wav`;
    await h.app.ctx.storage.putStream(key, Readable.from([await audio("wav")]));
    const tables = createJobTables(h.prisma);
    await tables.separation.complete(jobs[0]!.id, {
      vocalKey: key,
      lossyVocalKey: null,
      backingKey: null,
      stems: [],
      lossyStems: [],
      models: ["vocals"],
    });
    await tables.separation.fail(jobs[1]!.id, "could not decode");
    return id;
  };
  return {
    createBatch: {
      200: () => create(0),
      400: () => ({ method: "POST", url: batches, headers: { "content-type": "text/plain" }, payload: "not a form" }),
      409: async () => {
        await made(withKey(await create(1), "coverage-batch"), 200);
        return withKey(await create(2), "coverage-batch");
      },
      413: () => ({ method: "POST", url: batches, ...multipart({ kind: "stem-split" }, [file("files", oversized())]) }),
      // no file is audio
      422: () => ({ method: "POST", url: batches, ...multipart({ kind: "stem-split" }, [file("files", notAudio())]) }),
    },
    listBatches: {
      200: () => ({ method: "GET", url: `${batches}?order=desc&page=1&perPage=5` }),
      422: () => ({ method: "GET", url: `${batches}?perPage=0` }),
    },
    getBatch: { 200: async () => ({ method: "GET", url: `${batches}/${(await batch(3)).id}` }) },
    cancelBatch: {
      200: async () => ({ method: "POST", url: `${batches}/${(await batch(4)).id}/cancel` }),
      409: async () => ({ method: "POST", url: `${batches}/${await ended(5)}/cancel` }),
    },
    deleteBatch: { 204: async () => ({ method: "DELETE", url: `${batches}/${(await batch(6)).id}` }) },
    getBatchZip: {
      200: async () => ({ method: "GET", url: `${batches}/${await ended(7)}/zip` }),
      // still running
      409: async () => ({ method: "GET", url: `${batches}/${(await batch(8)).id}/zip` }),
    },
  };
}

/** /files: a stored file through its signed URL, a byte range of it, and what is refused. */
function fileDrivers(): Record<number, Driver> {
  const key = "outputs/coverage/1/vocals.wav";
  const signed = async (k = key) => {
    const url = new URL(await h.app.ctx.storage.signedUrl(k, 300));
    return `${url.pathname}${url.search}`;
  };
  const stored = async () => {
    await h.app.ctx.storage.putStream(key, Readable.from([await audio("wav")]));
    return signed();
  };
  return {
    200: async () => ({ method: "GET", url: await stored() }),
    206: async () => ({ method: "GET", url: await stored(), headers: { range: "bytes=0-99" } }),
    403: async () => ({ method: "GET", url: (await stored()).replace(/signature=[^&]+/, "signature=0000") }),
    404: async () => ({ method: "GET", url: await signed("outputs/coverage/1/missing.wav") }),
    416: async () => ({ method: "GET", url: await stored(), headers: { range: "bytes=99999999-" } }),
  };
}

interface DocumentOperation {
  operationId: string;
  method: string;
  path: string;
  statuses: number[];
  takesKey: boolean;
}

function documentedOperations(): DocumentOperation[] {
  const doc = h.app.swagger() as unknown as {
    paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown>; security?: object[] }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      operationId: op.operationId,
      method: method.toUpperCase(),
      path,
      statuses: Object.keys(op.responses).map(Number),
      takesKey: (op.security ?? []).some((s) => "bearerAuth" in s),
    })),
  );
}

/** The operation's path with an id in it (the given one, else one no row has). */
const pathOf = (op: DocumentOperation, id: number = ABSENT_ID) => op.path.replace("{id}", String(id));

/** The drivers every operation with the status shares: without a key, an absent id, over the key's rate limit. */
function genericDriver(op: DocumentOperation, status: number): { driver: Driver; auth?: Record<string, string> } | undefined {
  const bare: Request = { method: op.method as Request["method"], url: pathOf(op) };
  if (status === 401 && op.takesKey) return { driver: () => bare, auth: {} };
  if (status === 404 && op.path.includes("{id}")) return { driver: () => bare };
  if (status === 429 && op.takesKey) return { driver: () => bare, auth: limited.auth };
  return undefined;
}

test("every (operation, status) pair the served document declares is driven, and every answer matches the document", async (t) => {
  const operations = documentedOperations();
  const specific = drivers();
  const undriven: string[] = [];
  const outages: DocumentOperation[] = [];
  let pairs = 0;
  for (const op of operations) {
    for (const status of op.statuses) {
      pairs++;
      const pair = `${op.operationId} ${status}`;
      if (NOT_DRIVEN[pair]) continue;
      if (status === 503) {
        outages.push(op);
        continue;
      }
      const own = specific[op.operationId]?.[status];
      const generic = own ? undefined : genericDriver(op, status);
      const driver = own ?? generic?.driver;
      if (!driver) {
        undriven.push(pair);
        continue;
      }
      const req = await driver();
      let res = await send(req, generic?.auth);
      // The rate limit's window may have turned over between two requests: the next one is over it again.
      if (status === 429 && res.statusCode !== 429) res = await send(req, generic?.auth);
      assert.equal(
        res.statusCode,
        status,
        `${pair}: ${req.method} ${req.url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`,
      );
    }
  }
  assert.deepEqual(undriven, [], "pairs the document declares that no driver provokes (add one, or say in NOT_DRIVEN why not)");

  // 503: with PostgreSQL stopped, every operation that declares it (each looks its API key up there).
  await h.stack.postgres.halt();
  try {
    for (const op of outages) {
      const req: Request =
        op.operationId === "signInToDashboard"
          ? { method: "POST", url: op.path, ...json({ code: "any-code" }) }
          : { method: op.method as Request["method"], url: pathOf(op, 1) };
      const res = await send(req);
      assert.equal(
        res.statusCode,
        503,
        `${op.operationId} 503: ${req.method} ${req.url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`,
      );
    }
  } finally {
    await h.stack.postgres.resume();
  }

  await h.wire.verify();
  assert.deepEqual(h.wire.problems, [], "answers that differ from the document");
  const expected = operations.flatMap((op) => op.statuses.map((s) => `${op.operationId} ${s}`)).filter((p) => !NOT_DRIVEN[p]);
  assert.deepEqual(
    expected.filter((p) => !h.wire.covered.has(p)),
    [],
    "pairs driven whose answer the document check did not see",
  );
  // The document was read (a document with no pairs would pass the rest).
  assert.ok(pairs > 150, `the document declares ${pairs} pairs`);
  t.diagnostic(`${expected.length} of ${pairs} (operation, status) pairs driven and matched`);
});

test("the check names each way an answer can differ from the document: an undeclared status, a body off its schema, a declared header missing, an undeclared Content-Type", async () => {
  const app = Fastify({ logger: false });
  await app.register(swagger, {
    openapi: { openapi: "3.1.0", info: { title: "drift", version: "1" } },
    transformObject: documentedObject,
  });
  const wire = new WireCheck();
  wire.attach(app);
  const schema: FastifySchema = {
    operationId: "getThing",
    params: Type.Object({ id: Type.String() }),
    response: {
      200: Type.Object({ id: Type.Integer() }),
      429: {
        description: "Too many",
        headers: { "Retry-After": alwaysSent(Type.Integer({ minimum: 1 })) },
        content: { "application/json": { schema: Type.Object({ message: Type.String() }) } },
      },
    },
  };
  app.get("/things/:id", { schema }, async (request, reply) => {
    const json = (status: number, body: string) => reply.code(status).type("application/json").send(body);
    switch ((request.params as { id: string }).id) {
      case "teapot":
        return json(418, "{}");
      case "text-id":
        return json(200, '{"id":"seven"}');
      case "no-retry-after":
        return json(429, '{"message":"slow down"}');
      case "html":
        return reply.type("text/html").send("<p>7</p>");
      default:
        return { id: 7 };
    }
  });
  await app.ready();
  for (const id of ["7", "teapot", "text-id", "no-retry-after", "html"]) await app.inject({ url: `/things/${id}` });
  await app.close();
  await wire.verify();
  assert.deepEqual([...wire.covered], ["getThing 200"]);
  const expected = [
    /^getThing 418 .*answered 418, which the document does not declare/,
    /^getThing 200 .*body\/id must be integer/,
    /^getThing 429 .*header Retry-After \(required\) was not sent/,
    /^getThing 200 .*Content-Type text\/html.*declares application\/json/,
  ];
  assert.equal(wire.problems.length, expected.length, wire.problems.join("\n"));
  expected.forEach((pattern, i) => assert.match(wire.problems[i]!, pattern));
});
