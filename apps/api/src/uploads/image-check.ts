import { readFile } from "node:fs/promises";
import { imageSize } from "image-size";
import { unprocessable } from "../http/errors.ts";
import type { ReceivedFile } from "./receive-form.ts";

export interface CheckedImage {
  ext: "png" | "jpg" | "webp";
  contentType: string;
}

const ACCEPTED: Record<string, CheckedImage> = {
  png: { ext: "png", contentType: "image/png" },
  jpg: { ext: "jpg", contentType: "image/jpeg" },
  webp: { ext: "webp", contentType: "image/webp" },
};

/**
 * A cover image upload, judged by its bytes (never its name or declared type): a PNG, JPEG or
 * WebP whose header `image-size` can parse to real dimensions. Anything else is a 422 naming the
 * field. The size limit was already enforced while the part streamed in.
 */
export async function checkImageUpload(file: ReceivedFile): Promise<CheckedImage> {
  let type: string | undefined;
  let width = 0;
  let height = 0;
  try {
    ({ type, width, height } = imageSize(await readFile(file.path)));
  } catch {
    type = undefined;
  }
  const accepted = type ? ACCEPTED[type] : undefined;
  if (!accepted)
    throw unprocessable(
      `${file.field} must be a PNG, JPEG or WebP image${type ? ` (it is ${type})` : " (its bytes are not a known image)"}`,
    );
  if (!(width > 0 && height > 0)) throw unprocessable(`${file.field} has no usable dimensions (${width}x${height})`);
  return accepted;
}
