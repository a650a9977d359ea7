/** The longest a SigV4 presigned URL may live (S3 refuses more). */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/** One signature, fixed by the slice it was issued in. */
export interface SignRequest {
  key: string;
  /** Unix seconds the URL is signed at: the start of the current slice. */
  issuedAt: number;
  /** Seconds from `issuedAt` until the URL expires. */
  expiresIn: number;
}

/**
 * Download URLs signed once per time slice and reused within it. A client polling a finished
 * job asks for the same 11 URLs many times a second; signing each again (the AWS presigner's
 * middleware stack is ~0.2 ms a URL) was most of the read path's CPU. A URL issued at the slice's
 * start lives `ttl + slice` seconds from then, so every URL handed out is valid for at least
 * `ttlSeconds` from the moment it is handed out, as before.
 *
 * The slice is a tenth of the TTL, at most 60 s and at least 1 s. The cache holds at most
 * `maxEntries` URLs and drops the least recently issued first.
 */
export class SignedUrlCache {
  private readonly entries = new Map<string, { issuedAt: number; url: Promise<string> }>();

  constructor(
    private readonly sign: (request: SignRequest) => Promise<string> | string,
    private readonly maxSeconds = Number.POSITIVE_INFINITY,
    private readonly maxEntries = 20_000,
    private readonly now: () => number = Date.now,
  ) {}

  static sliceSeconds(ttlSeconds: number): number {
    return Math.max(1, Math.min(60, Math.floor(ttlSeconds / 10)));
  }

  get(key: string, ttlSeconds: number): Promise<string> {
    const slice = SignedUrlCache.sliceSeconds(ttlSeconds);
    const issuedAt = Math.floor(this.now() / 1000 / slice) * slice;
    const id = `${ttlSeconds} ${key}`;
    const hit = this.entries.get(id);
    if (hit && hit.issuedAt === issuedAt) return hit.url;
    const expiresIn = Math.min(ttlSeconds + slice, this.maxSeconds);
    const url = Promise.resolve().then(() => this.sign({ key, issuedAt, expiresIn }));
    this.entries.delete(id);
    this.entries.set(id, { issuedAt, url });
    // A failed signature is not remembered.
    url.catch(() => {
      if (this.entries.get(id)?.url === url) this.entries.delete(id);
    });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return url;
  }
}
