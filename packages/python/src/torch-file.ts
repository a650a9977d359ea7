import { open } from "node:fs/promises";
import { NameRegistry, Parser } from "pickleparser";
import yauzl from "yauzl";

/**
 * Reads what a PyTorch checkpoint (`torch.save` since torch 1.6: a zip with
 * `<archive>/data.pkl` and one entry per storage) holds, without PyTorch and
 * without reading a single weight: tensors come back as their dtype and
 * shape. Enough to tell a model's family and size from its file.
 */

export interface TensorInfo {
  readonly tensor: true;
  readonly dtype: string;
  readonly shape: readonly number[];
}

/** An instance of a class the checkpoint names (`demucs.htdemucs.HTDemucs`, `fractions.Fraction`, ...). */
export interface PickledInstance {
  readonly className: string;
  readonly args: readonly unknown[];
}

export class TorchFileError extends Error {
  override readonly name = "TorchFileError";
}

export function isTensorInfo(value: unknown): value is TensorInfo {
  return typeof value === "object" && value !== null && (value as TensorInfo).tensor === true;
}

const GLOBAL_NAME = Symbol("pickled global");

/** The dotted name of a class or function the checkpoint refers to (`klass` in a demucs package), if `value` is one. */
export function pickledGlobalName(value: unknown): string | undefined {
  return typeof value === "function" ? (value as { [GLOBAL_NAME]?: string })[GLOBAL_NAME] : undefined;
}

const STORAGE_DTYPES: Record<string, string> = {
  FloatStorage: "float32",
  HalfStorage: "float16",
  BFloat16Storage: "bfloat16",
  DoubleStorage: "float64",
  LongStorage: "int64",
  IntStorage: "int32",
  ShortStorage: "int16",
  CharStorage: "int8",
  ByteStorage: "uint8",
  BoolStorage: "bool",
};

const ZIP_MAGIC = 0x04034b50;
/** The pickle protocol 2 opcode a legacy (pre-1.6) torch.save file starts with. */
const LEGACY_PICKLE = 0x80;

export async function isZipFile(path: string): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    return bytesRead === 4 && head.readUInt32LE(0) === ZIP_MAGIC;
  } finally {
    await handle.close();
  }
}

async function firstByte(path: string): Promise<number | undefined> {
  const handle = await open(path, "r");
  try {
    const head = Buffer.alloc(1);
    const { bytesRead } = await handle.read(head, 0, 1, 0);
    return bytesRead === 1 ? head[0] : undefined;
  } finally {
    await handle.close();
  }
}

function readZipEntry(path: string, match: (name: string) => boolean): Promise<{ name: string; data: Buffer } | undefined> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: true }, (err, zip) => {
      if (err || !zip) return reject(new TorchFileError(`${path}: not a readable zip (${err?.message ?? "unknown error"})`));
      let done = false;
      zip.on("error", (e: Error) => reject(new TorchFileError(`${path}: ${e.message}`)));
      zip.on("end", () => {
        if (!done) resolve(undefined);
      });
      zip.on("entry", (entry: yauzl.Entry) => {
        if (!match(entry.fileName)) return zip.readEntry();
        done = true;
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(new TorchFileError(`${path}: ${e?.message ?? "cannot read"} ${entry.fileName}`));
          const chunks: Buffer[] = [];
          stream.on("data", (c: Buffer) => chunks.push(c));
          stream.on("error", reject);
          stream.on("end", () => {
            zip.close();
            resolve({ name: entry.fileName, data: Buffer.concat(chunks) });
          });
        });
      });
      zip.readEntry();
    });
  });
}

/**
 * Unpickles a torch checkpoint's `data.pkl`: dicts as plain objects, tensors
 * as TensorInfo, other classes as PickledInstance. Throws TorchFileError for
 * anything that is not a zip-format torch file.
 */
export async function readTorchFile(path: string): Promise<unknown> {
  if (!(await isZipFile(path))) {
    if ((await firstByte(path)) === LEGACY_PICKLE)
      throw new TorchFileError(
        `${path}: a legacy (pre-1.6) torch.save file; load and save it again with torch >= 1.6 (torch.save(torch.load(f), f))`,
      );
    throw new TorchFileError(`${path}: not a PyTorch checkpoint (no zip archive inside)`);
  }
  const entry = await readZipEntry(path, (name) => name === "data.pkl" || name.endsWith("/data.pkl"));
  if (!entry) throw new TorchFileError(`${path}: a zip without data.pkl, so not a PyTorch checkpoint`);
  return unpickleTorch(entry.data, path);
}

function unpickleTorch(data: Buffer, source: string): unknown {
  const registry = new (class extends NameRegistry {
    override onMissingName(module: string, name: string) {
      const className = `${module}.${name}`;
      // a function or a class alike: REDUCE calls it, NEWOBJ constructs it
      const global = function (...args: unknown[]): PickledInstance {
        return { className, args };
      };
      Object.defineProperty(global, GLOBAL_NAME, { value: className });
      return global as unknown as new (...args: unknown[]) => unknown;
    }
  })();
  const storageTypes = new Map<unknown, string>();
  for (const [storage, dtype] of Object.entries(STORAGE_DTYPES)) {
    const type = () => undefined;
    storageTypes.set(type, dtype);
    registry.register("torch", storage, type);
  }
  registry.register("collections", "OrderedDict", () => ({}));
  registry.register("torch._utils", "_rebuild_tensor_v2", (storage: { dtype: string }, _offset: number, size: number[]) => ({
    tensor: true,
    dtype: storage.dtype,
    shape: [...size],
  }));
  registry.register("torch._utils", "_rebuild_parameter", (tensor: TensorInfo) => tensor);
  registry.register("torch._utils", "_rebuild_parameter_with_state", (tensor: TensorInfo) => tensor);
  const parser = new Parser({
    nameResolver: registry,
    persistentResolver: {
      resolve(pid: unknown) {
        // ('storage', storage_type, key, location, numel)
        const [kind, type] = pid as [string, unknown];
        if (kind !== "storage") throw new TorchFileError(`${source}: unknown persistent id ${JSON.stringify(kind)}`);
        return { dtype: storageTypes.get(type) ?? pickledGlobalName(type) ?? "unknown" };
      },
    },
    unpicklingTypeOfDictionary: "object",
    unpicklingTypeOfSet: "array",
  });
  try {
    return parser.parse(data);
  } catch (err) {
    if (err instanceof TorchFileError) throw err;
    throw new TorchFileError(`${source}: cannot read its pickle (${(err as Error).message})`);
  }
}
