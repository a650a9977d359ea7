import { KEY_AREAS, type ObjectStorage } from "@mixdown/storage";

/**
 * What object storage (the bucket, or STORAGE_LOCAL_DIR) holds, by area and kind, from the keys
 * Mixdown writes: `uploads/<kind>/<uuid>.<format>` (inputs), `outputs/<kind>/<row>/<file>`,
 * `voice-models/<id>/<file>`; anything else is counted under its first segment.
 */
export interface StoredGroup {
  area: string;
  kind: string;
  objects: number;
  bytes: number;
}

/** A count lists the whole bucket, so it is made at most this often (and on a scrape only). */
export const STORED_BYTES_REFRESH_MS = 300_000;

export function storedGroupOf(key: string): { area: string; kind: string } {
  const [area = "", second = ""] = key.split("/");
  if (area === KEY_AREAS.uploads || area === KEY_AREAS.outputs) return { area, kind: second };
  if (area === KEY_AREAS.voiceModels) return { area, kind: "voice-model" };
  return { area, kind: "" };
}

/**
 * The last count of stored bytes, made again once older than `refreshMs`. A count in progress is
 * shared; one that fails keeps the previous figures and says so through `error` until one succeeds.
 */
export class StoredBytes {
  #last: { at: number; groups: StoredGroup[] } | undefined;
  #counting: Promise<void> | undefined;
  #error: Error | undefined;

  constructor(
    private readonly storage: Pick<ObjectStorage, "forEachObject">,
    private readonly refreshMs = STORED_BYTES_REFRESH_MS,
  ) {}

  get last(): { at: number; groups: StoredGroup[] } | undefined {
    return this.#last;
  }

  get error(): Error | undefined {
    return this.#error;
  }

  /** Starts a count when the last is older than `refreshMs` (or there is none); resolves when it ends. */
  refreshIfStale(now = Date.now()): Promise<void> {
    if (this.#last && now - this.#last.at < this.refreshMs && !this.#error) return Promise.resolve();
    this.#counting ??= this.#count().finally(() => (this.#counting = undefined));
    return this.#counting;
  }

  async #count(): Promise<void> {
    const groups = new Map<string, StoredGroup>();
    try {
      await this.storage.forEachObject("", (key, bytes) => {
        const { area, kind } = storedGroupOf(key);
        const id = `${area}/${kind}`;
        const group = groups.get(id) ?? { area, kind, objects: 0, bytes: 0 };
        group.objects += 1;
        group.bytes += bytes;
        groups.set(id, group);
      });
      this.#last = { at: Date.now(), groups: [...groups.values()] };
      this.#error = undefined;
    } catch (error) {
      this.#error = error as Error;
    }
  }
}
