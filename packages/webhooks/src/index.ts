export { WebhookAddressPolicy } from "./address-policy.ts";
export { deliverWebhook, guardedLookup, WebhookRefused, type WebhookAnswer, type WebhookRequest } from "./deliver.ts";
export { signatureHeader, verifySignature } from "./signature.ts";
export {
  DOWNLOAD_LINK_RULES,
  downloadLinkProblem,
  hostAddress,
  MAX_WEBHOOK_URL_LENGTH,
  outboundUrlProblem,
  urlLengthProblem,
  webhookUrlProblem,
} from "./webhook-url.ts";
