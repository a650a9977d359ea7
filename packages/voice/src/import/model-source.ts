// Voice models from a link, the way people share RVC voices: a `.pth`, an RVC `.onnx`, or a
// `.zip` holding a `.pth` (or `.onnx`) and its `.index`. The API (URL rules), the worker (the
// import job's download) and the CLI (`voices import URL`) share this; it loads no onnxruntime.
import { createWriteStream } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { posix } from "node:path";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import yauzl from "yauzl";

/** The shared file cannot be a voice model (a bad zip, no model in it, too big unpacked): no retry helps. */
export class ModelSourceError extends Error {
  override readonly name = "ModelSourceError";
}

/**
 * The address that serves a shared file's bytes: a Hugging Face page link
 * (`https://huggingface.co/<owner>/<repo>/blob/<rev>/<file>`, what its file view's address bar
 * shows) becomes its `/resolve/` download link; any other URL is returned as it is.
 */
export function downloadUrlOf(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (!/^(www\.)?(huggingface\.co|hf\.co)$/i.test(url.hostname)) return value;
  // /<owner>/<repo>/blob/..., or /datasets|spaces/<owner>/<repo>/blob/...
  const match = /^(\/(?:datasets\/|spaces\/)?[^/]+\/[^/]+)\/blob\/(.+)$/.exec(url.pathname);
  if (!match) return value;
  url.pathname = `${match[1]}/resolve/${match[2]}`;
  return url.href;
}

export interface UnpackLimits {
  /** The most bytes the model file may unpack to (MAX_VOICE_MODEL_UPLOAD_BYTES). */
  maxModelBytes: number;
  /** The most bytes the feature index may unpack to (MAX_VOICE_MODEL_INDEX_BYTES). */
  maxIndexBytes: number;
}

export interface UnpackedVoiceModel {
  /** The model file: the downloaded file itself, or the one unpacked from the zip. */
  modelPath: string;
  /** The zip's feature index, unpacked, when it held one. */
  indexPath?: string;
  /** Names inside the zip of what was unpacked (absent for a file that was not a zip of files). */
  archive?: { model: string; index?: string };
}

const ZIP_MAGIC = Buffer.from("PK\x03\x04", "latin1");

async function head(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Folders and the litter macOS and Windows put in zips: never the model. */
function isLitter(name: string): boolean {
  const base = posix.basename(name);
  return (
    name.endsWith("/") ||
    name.startsWith("__MACOSX/") ||
    name.includes("/__MACOSX/") ||
    base === ".DS_Store" ||
    base.startsWith("._") ||
    base === "Thumbs.db" ||
    base === "desktop.ini"
  );
}

/** Why an entry's name would leave the folder it is unpacked into, or null. yauzl refuses these too; checked again here. */
function escapes(name: string): string | null {
  if (name.includes("\\")) return "it has a backslash";
  if (name.startsWith("/") || /^[a-z]:/i.test(name)) return "it is an absolute path";
  const normal = posix.normalize(name);
  if (normal === ".." || normal.startsWith("../")) return "it leads out of the zip's folder";
  return null;
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: false, validateEntrySizes: true, decodeStrings: true }, (err, zip) =>
      err ? reject(err) : resolve(zip),
    ),
  );
}

/** Every entry of the zip's central directory (names only are read; nothing is unpacked). */
async function listEntries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  const entries: yauzl.Entry[] = [];
  try {
    for await (const entry of zip.eachEntry()) {
      const problem = escapes(entry.fileName);
      if (problem) throw new ModelSourceError(`the zip's entry ${JSON.stringify(entry.fileName)} is refused: ${problem}`);
      entries.push(entry);
    }
  } catch (err) {
    if (err instanceof ModelSourceError) throw err;
    const message = (err as Error).message;
    // yauzl's own name checks (absolute path, invalid relative path: ../x)
    if (/absolute path|invalid relative path|invalid characters/.test(message))
      throw new ModelSourceError(`the zip has an entry outside its folder (${message}); nothing was unpacked`);
    throw new ModelSourceError(`the file is not a readable zip (${message})`);
  }
  return entries;
}

/**
 * Unpacks one entry to `target`, counting the bytes as they inflate (the header's sizes are
 * not trusted) and stopping at `limit`.
 */
async function unpackEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, target: string, limit: number): Promise<void> {
  if (entry.isEncrypted()) throw new ModelSourceError(`the zip's ${entry.fileName} is encrypted`);
  if (entry.uncompressedSize > limit)
    throw new ModelSourceError(
      `the zip's ${entry.fileName} unpacks to ${entry.uncompressedSize} bytes, over the limit of ${limit}`,
    );
  let stream;
  try {
    stream = await zip.openReadStreamPromise(entry);
  } catch (err) {
    throw new ModelSourceError(`the zip's ${entry.fileName} cannot be read (${(err as Error).message})`);
  }
  let count = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      count += chunk.length;
      if (count > limit)
        return done(new ModelSourceError(`the zip's ${entry.fileName} unpacks to more than the limit of ${limit} bytes`));
      done(null, chunk);
    },
  });
  try {
    await pipeline(stream, counter, createWriteStream(target));
  } catch (err) {
    if (err instanceof ModelSourceError) throw err;
    const message = (err as Error).message;
    // yauzl stops an entry that inflates past the size its header states.
    if (/too many bytes in the stream/.test(message))
      throw new ModelSourceError(
        `the zip's ${entry.fileName} unpacks to more than the ${entry.uncompressedSize} bytes its header states (a zip bomb?); refused`,
      );
    throw new ModelSourceError(`the zip's ${entry.fileName} is damaged (${message})`);
  }
}

/**
 * Looks at a downloaded file and unpacks the model from it when it is a zip of files:
 * - not a zip: the model file itself (an ONNX);
 * - a zip that is itself a PyTorch checkpoint (`torch.save` writes zips: `<name>/data.pkl`, no
 *   model files inside): the model file itself (a `.pth`);
 * - a zip of files: exactly one `.pth` or `.onnx` (folders, `__MACOSX/`, `.DS_Store` and other
 *   files ignored) and at most one `.index`, each unpacked into `dir` (as `model.pth` /
 *   `model.onnx`, `model.index`: never under a name from the zip) within its byte limit.
 * Any entry whose name leads out of the zip's folder refuses the whole zip. Problems are
 * ModelSourceErrors naming them.
 */
export async function unpackVoiceModel(path: string, dir: string, limits: UnpackLimits): Promise<UnpackedVoiceModel> {
  if (!(await head(path, 4)).equals(ZIP_MAGIC)) return { modelPath: path };
  const zip = await openZip(path).catch((err: Error) => {
    throw new ModelSourceError(`the file is not a readable zip (${err.message})`);
  });
  try {
    const entries = (await listEntries(zip)).filter((e) => !isLitter(e.fileName));
    const models = entries.filter((e) => /\.(pth|onnx)$/i.test(e.fileName));
    const indexes = entries.filter((e) => /\.index$/i.test(e.fileName));
    if (models.length === 0) {
      if (entries.some((e) => /(^|\/)data\.pkl$/.test(e.fileName))) return { modelPath: path };
      const found = entries.map((e) => e.fileName).slice(0, 8);
      throw new ModelSourceError(
        `the zip holds no voice model (a .pth or .onnx file)${found.length ? `; it holds ${found.join(", ")}${entries.length > found.length ? ", ..." : ""}` : "; it is empty"}`,
      );
    }
    if (models.length > 1)
      throw new ModelSourceError(
        `the zip holds ${models.length} model files (${models.map((e) => e.fileName).join(", ")}); it must hold exactly one`,
      );
    if (indexes.length > 1)
      throw new ModelSourceError(
        `the zip holds ${indexes.length} .index files (${indexes.map((e) => e.fileName).join(", ")}); it may hold at most one`,
      );
    const model = models[0]!;
    const index = indexes[0];
    await mkdir(dir, { recursive: true });
    const modelPath = join(dir, `model.${model.fileName.toLowerCase().endsWith(".pth") ? "pth" : "onnx"}`);
    await unpackEntry(zip, model, modelPath, limits.maxModelBytes);
    if (!index) return { modelPath, archive: { model: model.fileName } };
    const indexPath = join(dir, "model.index");
    await unpackEntry(zip, index, indexPath, limits.maxIndexBytes);
    return { modelPath, indexPath, archive: { model: model.fileName, index: index.fileName } };
  } finally {
    zip.close();
  }
}
