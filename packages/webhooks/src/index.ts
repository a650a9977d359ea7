export { WebhookAddressPolicy } from "./address-policy.ts";
export { deliverWebhook, guardedLookup, WebhookRefused, type WebhookAnswer, type WebhookRequest } from "./deliver.ts";
export { signatureHeader, verifySignature } from "./signature.ts";
export { hostAddress, MAX_WEBHOOK_URL_LENGTH, outboundUrlProblem, urlLengthProblem, webhookUrlProblem } from "./webhook-url.ts";
