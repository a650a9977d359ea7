import { createHash } from "node:crypto";
import type { ReceivedFile, ReceivedForm } from "../uploads/receive-form.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** JSON with object keys sorted at every depth, so `{a,b}` and `{b,a}` are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * A multipart form's content: its text fields and, per file part, the client's file name (it is
 * stored with the job) and the sha256 of the bytes. Part order does not matter, but for a batch's files.
 */
export function formContent(form: ReceivedForm): string {
  const described = (f: ReceivedFile) => ({ filename: f.filename ?? null, size: f.size, sha256: f.sha256 });
  return canonicalJson({
    fields: Object.fromEntries(form.fields),
    files: Object.fromEntries([...form.files].map(([field, f]) => [field, described(f)])),
    // A batch's files in their order (their order is the batch's); absent from other forms, whose fingerprints stay as they were.
    ...(form.fileList.length > 0 ? { fileList: form.fileList.map(described) } : {}),
  });
}

/** What an Idempotency-Key is bound to: the method, the route pattern and the request's content. */
export function requestFingerprint(method: string, route: string, content: string): string {
  return sha256(canonicalJson([method.toUpperCase(), route, sha256(content)]));
}
