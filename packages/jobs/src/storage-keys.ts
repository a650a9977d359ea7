import { randomUUID } from "node:crypto";

// Every key Mixdown writes is spelled here, byte for byte as rows already hold them: a row keeps
// its keys for good, so a new spelling would orphan the objects of every existing row.

/** The first segment of every key Mixdown writes (the API's stored-bytes metric groups by it). */
export const KEY_AREAS = { uploads: "uploads", outputs: "outputs", voiceModels: "voice-models" } as const;

/**
 * The key a create stores a received file under, `uploads/<kind>/<uuid>.<ext>`: `kind` is the
 * payload's spelling (`vocal-separation`, `stem-split`, `voice-conversion`), or `voice-models` for a
 * voice model's reference recording. A new key each call, so a retried create never overwrites.
 */
export const uploadKey = (kind: string, ext: string) => `${KEY_AREAS.uploads}/${kind}/${randomUUID()}.${ext}`;

/**
 * The input of a pipeline's step `index` (0-based) run as a job of `kind`, copied from the step
 * before it (or the pipeline's upload): `uploads/<kind>/pipeline-<id>-step-<index>-<name>.<ext>` (`name`: `input`, or `backing` for
 * a recombine's). Fixed
 * per step, so a retried step copies over the same object and leaves none behind; the step's job
 * owns it as an upload (its retention and deletion take it).
 */
export const pipelineStepInputKey = (kind: string, pipelineId: number, index: number, name: string, ext: string) =>
  `${KEY_AREAS.uploads}/${kind}/pipeline-${pipelineId}-step-${index}-${name}.${ext}`;

/**
 * The keys of a job's outputs, `outputs/<kind>/<rowId>/<file>` (`kind` as in its payload:
 * `vocal-separation`, `stem-split`, `voice-conversion`, `tts`). Deterministic, so a retry
 * overwrites in place, and a cancelled attempt's discard finds everything it stored.
 */
export const jobOutputKeys = (kind: string, rowId: number) => {
  const folder = `${KEY_AREAS.outputs}/${kind}/${rowId}`;
  return {
    /** what `deletePrefix` removes: the folder with its slash, so row 1's does not reach row 12's */
    prefix: `${folder}/`,
    /** a file the job publishes (`output.mp3`, `vocals.flac`) */
    file: (name: string) => `${folder}/${name}`,
  };
};

/**
 * The storage keys of a voice model's files, spelled once: the API (imports), the CLI
 * (`voices import`) and the worker (builds, blends, media) all write and read these.
 */
export const voiceModelKeys = (id: number) => {
  const prefix = `${KEY_AREAS.voiceModels}/${id}`;
  return {
    prefix,
    /** the ONNX the worker runs */
    model: `${prefix}/model.onnx`,
    /** an RVC model's faiss feature index */
    index: `${prefix}/model.index`,
    /** an uploaded RVC `.pth`, kept until the build converts it */
    checkpoint: `${prefix}/model.pth`,
    /** the cover the owner uploaded (`ext`: its format) */
    uploadedCover: (ext: string) => `${prefix}/cover.${ext}`,
    /** the cover and demo clip the worker renders */
    cover: `${prefix}/cover.png`,
    demo: `${prefix}/demo.mp3`,
  };
};
