import { basename, extname } from "node:path";
import type { Readable } from "node:stream";
import type { BatchWithJobs, SeparationJob, StoredStem } from "@mixdown/db";
import type { ObjectStorage } from "@mixdown/storage";
import { ZipFile } from "yazl";

/** One file of a batch's zip: where it goes in the zip and the stored object it is. */
export interface ZipEntry {
  path: string;
  key: string;
  mtime: Date;
}

/** A folder name from a client's file name: its base name without the extension, path and control characters gone. */
function folderName(fileName: string | null, index: number): string {
  const base = fileName ? basename(fileName.replaceAll("\\", "/"), extname(fileName)) : "";
  const safe = base
    .replace(/[\u0000-\u001f\u007f/:*?"<>|]/g, "_")
    .replace(/^\.+/, "")
    .trim()
    .slice(0, 100);
  // Numbered in the batch's order, so two files of one name get two folders.
  return `${String(index + 1).padStart(3, "0")}-${safe || "file"}`;
}

function outputKeys(job: SeparationJob): string[] {
  const stems = (value: unknown) => (Array.isArray(value) ? (value as StoredStem[]).map((s) => s.key) : []);
  const keys = [job.vocalKey, job.backingKey, job.lossyVocalKey, ...stems(job.stems), ...stems(job.lossyStems)];
  return [...new Set(keys.filter((k): k is string => typeof k === "string" && k !== ""))];
}

/** Every stored output of the batch's successful jobs, a folder per input file (in the batch's order). */
export function batchZipEntries(batch: BatchWithJobs): ZipEntry[] {
  return batch.jobs.flatMap((job, index) => {
    if (job.status !== "success") return [];
    const folder = folderName(job.inputFileName, index);
    const mtime = job.jobEndTime ?? job.createdAt;
    return outputKeys(job).map((key) => ({ path: `${folder}/${basename(key)}`, key, mtime }));
  });
}

/**
 * The zip of `entries`, streamed: each object is opened only when the zip reaches it
 * (`addReadStreamLazy`) and piped through as it is (stored, not deflated: WAV, FLAC and MP3 do not
 * shrink enough to pay for it), so memory holds one object's chunks in flight whatever the
 * batch's size. Sizes over 4 GiB take ZIP64 records (yazl writes them when needed).
 */
export function streamBatchZip(storage: Pick<ObjectStorage, "getStream">, entries: ZipEntry[]): Readable {
  const zip = new ZipFile();
  const output = zip.outputStream as Readable;
  // A stored object that cannot be read (storage away) ends the download with an error: the
  // client sees a cut-short body, never a zip that silently lacks a file.
  zip.on("error", (error: Error) => output.destroy(error));
  for (const entry of entries) {
    zip.addReadStreamLazy(entry.path, { compress: false, mtime: entry.mtime }, (callback) => {
      storage.getStream(entry.key).then(
        (stream) => {
          stream.once("error", (error: Error) => zip.emit("error", error));
          callback(null, stream);
        },
        (error: unknown) => callback(error, undefined as never),
      );
    });
  }
  zip.end();
  return output;
}
