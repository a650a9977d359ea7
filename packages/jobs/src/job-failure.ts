/**
 * Why a job failed, as a class that survives `postMessage` between threads (a plain object), so
 * that no one re-derives it from the message text:
 * - `bad-input`: the caller's input can never work (undecodable audio, incompatible models); no retry.
 * - `permanent`: no retry can help for another reason (a missing model file, a broken setup).
 * - `transient`: anything else (storage, Redis, a killed thread); retried with backoff.
 * - `cancelled`: the job was asked to stop; it ends `cancelled` and publishes nothing.
 */
export type JobErrorKind = "bad-input" | "permanent" | "transient" | "cancelled";

export interface SerialisedJobError {
  kind: JobErrorKind;
  message: string;
}

export class JobFailure extends Error {
  override readonly name = "JobFailure";
  constructor(
    readonly kind: JobErrorKind,
    message: string,
  ) {
    super(message);
  }

  /** Whether another attempt could succeed. */
  get retryable(): boolean {
    return this.kind === "transient";
  }

  serialise(): SerialisedJobError {
    return { kind: this.kind, message: this.message };
  }

  static from(error: SerialisedJobError): JobFailure {
    return new JobFailure(error.kind, error.message);
  }
}

/** How a job ended, announced once per job by the worker (webhooks and metrics listen). */
export type JobEndStatus = "success" | "error" | "cancelled";
