import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import type { VoiceModelImportRepository } from "@mixdown/db";
import { voiceModelKeys, type ObjectStorage } from "@mixdown/storage";
import { FeatureIndexError, inspectFeatureIndexFile, type FeatureIndexInfo } from "@mixdown/voice/feature-index";
import { inspectVoiceModelFile, rvcVersionOf, VoiceModelFileError } from "@mixdown/voice/model-file";
import { describeRvcCheckpoint, type RvcCheckpointInfo } from "@mixdown/voice/rvc-checkpoint";
import type { WebhookAddressPolicy } from "@mixdown/webhooks";
import { readTorchFile, TorchFileError } from "@mixdown/python/torch-file";
import type { FastifyBaseLogger } from "fastify";
import { unprocessable } from "../http/errors.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { VoiceModelRecord } from "@mixdown/records";
import type { JobSubmitter } from "../jobs/job-submitter.ts";
import { StoredUploads } from "../jobs/stored-upload.ts";
import { checkAudioUpload } from "../uploads/audio-check.ts";
import { checkDownloadLink } from "../uploads/download-link.ts";
import { checkImageUpload } from "../uploads/image-check.ts";
import type { ReceivedFile } from "../uploads/receive-form.ts";
import type { VoiceModelImportForm } from "./routes.ts";

const LINKS = ["twitterLink", "instagramLink", "tiktokLink", "spotifyLink", "youtubeLink", "imageUrl", "demoUrl"] as const;
const RVC_RATES = [32000, 40000, 48000];

export interface VoiceModelMetadata {
  title: string;
  tags: string[];
  sampleRate?: number;
  /** An instrument model rather than a voice (`GET /voice-models?instruments=true`). */
  instrument: boolean;
  links: Partial<Record<(typeof LINKS)[number], string>>;
}

/** Parses the `metadata` part: a JSON object with `title` and optional tags, links, (RVC) sampleRate and instrument. */
export function parseModelMetadata(raw: string | undefined): VoiceModelMetadata {
  if (raw === undefined || raw.trim() === "")
    throw unprocessable('metadata is required: a JSON object such as {"title": "My voice"}');
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw unprocessable("metadata must be a JSON object; it is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw unprocessable("metadata must be a JSON object");
  const m = value as Record<string, unknown>;
  const known = new Set<string>(["title", "tags", "sampleRate", "instrument", ...LINKS]);
  const unknown = Object.keys(m).filter((k) => !known.has(k));
  if (unknown.length > 0) throw unprocessable(`metadata.${unknown[0]} is not a known field (known: ${[...known].join(", ")})`);
  if (typeof m.title !== "string" || m.title.trim() === "" || m.title.length > 200)
    throw unprocessable("metadata.title must be a non-empty string (at most 200 characters)");
  const tags = m.tags ?? [];
  if (!Array.isArray(tags) || tags.length > 20 || tags.some((t) => typeof t !== "string" || t.length > 50)) {
    throw unprocessable("metadata.tags must be an array of at most 20 strings");
  }
  if (m.sampleRate !== undefined && !RVC_RATES.includes(m.sampleRate as number)) {
    throw unprocessable(`metadata.sampleRate must be one of ${RVC_RATES.join(", ")} (the RVC model's output rate)`);
  }
  if (m.instrument !== undefined && typeof m.instrument !== "boolean")
    throw unprocessable("metadata.instrument must be true (an instrument model) or false (a voice)");
  const links: VoiceModelMetadata["links"] = {};
  for (const name of LINKS) {
    const v = m[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string" || !/^https?:\/\/\S+$/.test(v) || v.length > 2000)
      throw unprocessable(`metadata.${name} must be an http(s) URL`);
    links[name] = v;
  }
  return {
    title: m.title.trim(),
    tags: tags as string[],
    ...(m.sampleRate !== undefined ? { sampleRate: m.sampleRate as number } : {}),
    instrument: m.instrument === true,
    links,
  };
}

/**
 * Imports a caller's voice model: an ONNX file of a known architecture (checked by its signature
 * with onnx-proto, without loading onnxruntime in the API), or a reference recording from which
 * the worker builds a native model, with an optional cover `image`.
 * - modelFile: the row is created `pending`, the files stored at `voice-models/<id>/model.onnx`
 *   (and `cover.<ext>`), then the row is published `ready`; on any failure nothing stays.
 * - referenceFile: the recording is checked (it must decode) and stored under `uploads/voice-models/`,
 *   the row is created `pending` with its `referenceKey`, and a `voice-model-build` job is queued;
 *   the answer is the pending model. The worker publishes it `ready` or `failed`.
 * - modelUrl (and indexUrl): the links are checked (URL rules, WEBHOOK_DENIED_NETWORKS on literal
 *   addresses), the row is created `pending` (rvc) with the link as `sourceUrl`, and a
 *   `voice-model-build` job is queued: the worker downloads, unpacks a zip, converts or checks the
 *   model, and publishes it `ready` or `failed` with the reason.
 * A ready model then gets its demo (and a cover when none was uploaded): a `voice-model-media` job.
 */
export class VoiceModelImportService {
  constructor(
    private readonly deps: {
      imports: VoiceModelImportRepository;
      storage: ObjectStorage;
      submitter: JobSubmitter;
      presenter: RecordPresenter;
      log: FastifyBaseLogger;
      /** WEBHOOK_DENIED_NETWORKS: the addresses a `modelUrl` / `indexUrl` may not lead to. */
      policy: WebhookAddressPolicy;
      /** MAX_CONVERSION_SECONDS: the longest reference recording a native voice is built from. */
      maxReferenceSeconds: number;
    },
  ) {}

  /**
   * An import, its form already read by the route's schema (VoiceModelImportForm); what the
   * schema cannot say is checked here: the metadata's JSON, which parts go together, the links'
   * addresses and the files' contents.
   */
  async import(callerId: number, form: VoiceModelImportForm): Promise<VoiceModelRecord> {
    const metadata = parseModelMetadata(form.metadata);
    const { modelFile, referenceFile: reference, indexFile, image: imageFile } = form;
    const modelUrl = checkDownloadLink("modelUrl", form.modelUrl, this.deps.policy);
    const indexUrl = checkDownloadLink("indexUrl", form.indexUrl, this.deps.policy);
    if ([modelFile, modelUrl, reference].filter(Boolean).length !== 1)
      throw unprocessable(
        "send exactly one of modelFile (an RVC .pth or ONNX voice model), modelUrl (a link to one: .pth, .onnx, or a .zip holding a .pth and its .index) or referenceFile (a recording to build a native voice from)",
      );
    if (indexUrl && !modelUrl) throw unprocessable("indexUrl goes with a modelUrl (it is that model's feature index)");
    if (indexFile && modelUrl)
      throw unprocessable("indexFile goes with a modelFile; with a modelUrl, send the index's link as indexUrl");
    if (indexFile && !modelFile) throw unprocessable("indexFile goes with an RVC modelFile (it is that model's feature index)");
    const image = imageFile ? await checkImageUpload(imageFile) : undefined;
    const fields = {
      ownerId: callerId,
      title: metadata.title,
      tags: metadata.tags,
      instrument: metadata.instrument,
      ...metadata.links,
    };

    if (modelUrl) {
      // The worker downloads it: the model is pending until then (see the voice-model-build job).
      const row = await this.deps.imports.createPending({
        ...fields,
        architecture: "rvc",
        sampleRate: metadata.sampleRate ?? 40000,
        metadata: { source: "url", ...(indexUrl ? { indexUrl } : {}) },
        sourceUrl: modelUrl,
      });
      let pending = row;
      if (image && imageFile) {
        const imageKey = voiceModelKeys(row.id).uploadedCover(image.ext);
        try {
          await this.deps.storage.putFile(imageKey, imageFile.path, { contentType: image.contentType });
          pending = await this.deps.imports.setCover(row.id, imageKey);
        } catch (err) {
          await this.#discard(row.id, [imageKey]);
          throw err;
        }
      }
      await this.deps.submitter.submit({ queue: "voice-model-build", payload: { voiceModelId: row.id } }, () =>
        this.deps.imports.markBuildEnqueued(row.id),
      );
      return this.deps.presenter.voiceModel(pending);
    }

    if (reference) {
      const { format } = await checkAudioUpload(reference, ["wav", "mp3", "flac"], {
        seconds: this.deps.maxReferenceSeconds,
        setting: "MAX_CONVERSION_SECONDS",
      });
      const uploads = new StoredUploads(this.deps.storage, this.deps.log);
      const referenceKey = await uploads.commit(() => uploads.store("voice-models", reference, format));
      const row = await uploads.commit(() =>
        this.deps.imports.createPending({
          ...fields,
          architecture: "native",
          sampleRate: 44100,
          metadata: { source: "reference" },
          referenceKey,
        }),
      );
      let pending = row;
      if (image && imageFile) {
        const imageKey = voiceModelKeys(row.id).uploadedCover(image.ext);
        pending = await uploads.commit(async () => {
          try {
            await this.deps.storage.putFile(imageKey, imageFile.path, { contentType: image.contentType });
            return await this.deps.imports.setCover(row.id, imageKey);
          } catch (err) {
            await this.deps.storage
              .delete(imageKey)
              .catch((e: unknown) => this.deps.log.error({ err: e, key: imageKey }, "could not delete an orphaned cover"));
            await this.deps.imports.delete(row.id);
            throw err;
          }
        });
      }
      await this.deps.submitter.submit({ queue: "voice-model-build", payload: { voiceModelId: row.id } }, () =>
        this.deps.imports.markBuildEnqueued(row.id),
      );
      return this.deps.presenter.voiceModel(pending);
    }

    const bytes = await readFile(modelFile!.path);
    const checkIndex = async (): Promise<FeatureIndexInfo | undefined> => {
      if (!indexFile) return undefined;
      try {
        return await inspectFeatureIndexFile(indexFile.path);
      } catch (err) {
        if (err instanceof FeatureIndexError) throw unprocessable(`indexFile: ${err.message}`);
        throw err;
      }
    };
    // torch.save writes a zip: an RVC .pth, converted by a voice-model-build job.
    if (bytes.subarray(0, 4).equals(Buffer.from("PK\x03\x04", "latin1"))) {
      let checkpoint: RvcCheckpointInfo;
      try {
        checkpoint = describeRvcCheckpoint(await readTorchFile(modelFile!.path));
      } catch (err) {
        // TorchFileError names the file by its path: here a temporary one the caller never saw.
        if (err instanceof VoiceModelFileError || err instanceof TorchFileError)
          throw unprocessable(`modelFile: ${err.message.replaceAll(`${modelFile!.path}: `, "")}`);
        throw err;
      }
      return this.#importCheckpoint(fields, checkpoint, modelFile!, await checkIndex(), indexFile, image, imageFile);
    }
    let info;
    try {
      info = inspectVoiceModelFile(bytes);
    } catch (err) {
      if (err instanceof VoiceModelFileError) throw unprocessable(`modelFile: ${err.message}`);
      throw err;
    }
    if (indexFile && info.architecture !== "rvc") throw unprocessable("indexFile: only RVC voice models take a feature index");
    const index = await checkIndex();
    const sampleRate =
      info.architecture === "native" ? (info.sampleRate ?? 44100) : (info.sampleRate ?? metadata.sampleRate ?? 40000);
    // Which ContentVec an RVC model takes (what `missingAssets` checks for).
    const version = rvcVersionOf(info);
    const uploaded = { source: "upload", ...(version ? { rvc: { version } } : {}) };
    const row = await this.deps.imports.createPending({
      ...fields,
      architecture: info.architecture,
      sampleRate,
      metadata: uploaded,
    });
    const key = voiceModelKeys(row.id).model;
    const indexKey = index ? voiceModelKeys(row.id).index : undefined;
    const imageKey = image ? voiceModelKeys(row.id).uploadedCover(image.ext) : undefined;
    let published;
    try {
      await this.deps.storage.putStream(key, Readable.from([Buffer.from(bytes)]), { contentType: "application/octet-stream" });
      if (index && indexKey)
        await this.deps.storage.putFile(indexKey, indexFile!.path, { contentType: "application/octet-stream" });
      if (image && imageKey) await this.deps.storage.putFile(imageKey, imageFile!.path, { contentType: image.contentType });
      published = await this.deps.imports.publish(
        row.id,
        key,
        imageKey,
        index && indexKey
          ? { ...uploaded, indexKey, index: { dim: index.dim, vectors: index.ntotal, lists: index.nlist } }
          : undefined,
      );
    } catch (err) {
      await this.#discard(row.id, [key, indexKey, imageKey]);
      throw err;
    }
    await this.deps.submitter.submit({ queue: "voice-model-media", payload: { voiceModelId: row.id } }, () =>
      this.deps.imports.markMediaEnqueued(row.id),
    );
    return this.deps.presenter.voiceModel(published);
  }

  /**
   * An RVC `.pth`: the row is created `pending` (architecture rvc, the file's own rate), the
   * `.pth` (and index, cover) stored under `voice-models/<id>/`, and a `voice-model-build` job
   * queued that converts it; on any failure before the job is queued nothing stays.
   */
  async #importCheckpoint(
    fields: { ownerId: number; title: string; tags: string[] },
    checkpoint: RvcCheckpointInfo,
    modelFile: ReceivedFile,
    index: FeatureIndexInfo | undefined,
    indexFile: ReceivedFile | undefined,
    image: Awaited<ReturnType<typeof checkImageUpload>> | undefined,
    imageFile: ReceivedFile | undefined,
  ): Promise<VoiceModelRecord> {
    const row = await this.deps.imports.createPending({
      ...fields,
      architecture: "rvc",
      sampleRate: checkpoint.sampleRate,
      metadata: { source: "upload" },
    });
    const referenceKey = voiceModelKeys(row.id).checkpoint;
    const indexKey = index ? voiceModelKeys(row.id).index : undefined;
    const imageKey = image ? voiceModelKeys(row.id).uploadedCover(image.ext) : undefined;
    let pending;
    try {
      await this.deps.storage.putFile(referenceKey, modelFile.path, { contentType: "application/octet-stream" });
      if (indexKey && indexFile)
        await this.deps.storage.putFile(indexKey, indexFile.path, { contentType: "application/octet-stream" });
      if (image && imageKey && imageFile) {
        await this.deps.storage.putFile(imageKey, imageFile.path, { contentType: image.contentType });
        await this.deps.imports.setCover(row.id, imageKey);
      }
      pending = await this.deps.imports.setBuildSource(row.id, referenceKey, {
        source: "upload",
        format: "pth",
        rvc: { ...checkpoint },
        ...(index && indexKey ? { indexKey, index: { dim: index.dim, vectors: index.ntotal, lists: index.nlist } } : {}),
      });
    } catch (err) {
      await this.#discard(row.id, [referenceKey, indexKey, imageKey]);
      throw err;
    }
    await this.deps.submitter.submit({ queue: "voice-model-build", payload: { voiceModelId: row.id } }, () =>
      this.deps.imports.markBuildEnqueued(row.id),
    );
    return this.deps.presenter.voiceModel(pending);
  }

  /** A failed import leaves nothing: its stored files and its row go. */
  async #discard(rowId: number, keys: (string | undefined)[]): Promise<void> {
    for (const k of keys) {
      if (k)
        await this.deps.storage
          .delete(k)
          .catch((e: unknown) => this.deps.log.error({ err: e, key: k }, "could not delete an orphaned voice model file"));
    }
    await this.deps.imports.delete(rowId);
  }
}
