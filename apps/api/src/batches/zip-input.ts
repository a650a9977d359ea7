import { join } from "node:path";
import type { Readable } from "node:stream";
import yauzl from "yauzl";
import { payloadTooLarge, unprocessable } from "../http/errors.ts";
import { describeSize, storePart, type ReceivedFile } from "../uploads/receive-form.ts";

export interface ZipInputLimits {
  /** MAX_SEPARATION_UPLOAD_BYTES: each file, unpacked. */
  maxBytes: number;
  /** MAX_BATCH_FILES */
  maxFiles: number;
  /** MAX_BATCH_BYTES: the files unpacked, together. */
  maxTotalBytes: number;
}

/** What a zip holds besides the files: folders, macOS resource forks, hidden files. */
function skipped(name: string): boolean {
  return name.endsWith("/") || name.startsWith("__MACOSX/") || name.split("/").some((part) => part.startsWith("."));
}

/**
 * A batch's files sent as one zip part: each file entry unpacked into `dir` (the form's own
 * temporary folder, removed with it) as a received file, in the zip's order, held to the batch's
 * limits by the bytes that actually come out (a zip that claims small sizes and inflates past them
 * stops at the limit: 413). A part that is not a zip is a 422.
 */
export function unpackZipInput(zip: ReceivedFile, dir: string, limits: ZipInputLimits): Promise<ReceivedFile[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(zip.path, { lazyEntries: true, autoClose: true, strictFileNames: false }, (error, file) => {
      if (error) return reject(unprocessable(`zip is not a zip archive (${error.message})`));
      const files: ReceivedFile[] = [];
      let total = 0;
      const fail = (reason: unknown) => {
        file.close();
        reject(reason);
      };
      file.on("error", (e: Error) => fail(unprocessable(`zip could not be read: ${e.message}`)));
      file.on("end", () => resolve(files));
      file.on("entry", (entry: yauzl.Entry) => {
        if (skipped(entry.fileName)) return file.readEntry();
        if (files.length >= limits.maxFiles) {
          return fail(payloadTooLarge(`a batch takes at most ${limits.maxFiles} files (MAX_BATCH_FILES); the zip holds more`));
        }
        file.openReadStream(entry, (err, stream) => {
          if (err) return fail(unprocessable(`zip entry ${JSON.stringify(entry.fileName)} could not be read: ${err.message}`));
          const part = {
            fieldname: `zip entry ${JSON.stringify(entry.fileName)}`,
            filename: entry.fileName,
            file: stream as Readable,
          };
          storePart(part, join(dir, `zip-${files.length}`), limits.maxBytes, (n) => {
            total += n;
            if (total > limits.maxTotalBytes) {
              return payloadTooLarge(
                `the files of a batch are at most ${describeSize(limits.maxTotalBytes)} together (MAX_BATCH_BYTES); the zip unpacks to more`,
              );
            }
          }).then((received) => {
            files.push(received);
            file.readEntry();
          }, fail);
        });
      });
      file.readEntry();
    });
  });
}
