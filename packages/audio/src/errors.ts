/**
 * The input cannot be read as audio (corrupt, not audio, no audio stream).
 * Retrying will not help: job runners should treat it as unrecoverable.
 */
export class AudioDecodeError extends Error {
  override readonly name = "AudioDecodeError";
  readonly path: string;
  /** Why, without the path: what a caller who uploaded the file may be told. */
  readonly reason: string;

  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`cannot decode ${path}: ${message}`, options);
    this.path = path;
    this.reason = message;
  }
}

/** Writing an output failed (disk full, killed encoder, bad option). Usually transient. */
export class AudioEncodeError extends Error {
  override readonly name = "AudioEncodeError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
