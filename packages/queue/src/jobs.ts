// The catalogue lives in @mixdown/jobs (no dependencies, so config and db derive from it too);
// re-exported so queue users need one import.
export {
  bullJobId,
  bullJobName,
  isJobKind,
  JOB_CATALOGUE,
  JOB_KINDS,
  jobKind,
  rowIdOf,
  type JobKind,
  type JobRef,
  type PayloadByKind,
  type SeparationKind,
  type SeparationPayload,
  type VoiceBlendPayload,
  type VoiceConversionPayload,
  type VoiceModelBuildPayload,
  type VoiceModelMediaPayload,
  type WebhookDeliveryPayload,
} from "@mixdown/jobs";
