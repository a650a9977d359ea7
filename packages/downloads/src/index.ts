export {
  downloadFile,
  removePartial,
  DownloadError,
  type DownloadFailure,
  type DownloadOptions,
  type DownloadProgress,
  type DownloadedFile,
} from "./download.ts";
export { sha256File, uvrModelHash, verifyFile, type ExpectedFile, type VerifiedFile } from "./verify.ts";
export { withMirror } from "./mirror.ts";
