-- Webhooks: a job may name a URL to be told when it ends; the delivery is signed with the
-- secret of the API key that created the job.

-- Two v4 UUIDs (pg_strong_random, core since PostgreSQL 13, no pgcrypto needed) give 244 random
-- bits as 64 hex characters; existing keys get a secret the same way new ones do.
ALTER TABLE "ApiKey" ADD COLUMN "webhookSecret" TEXT NOT NULL
  DEFAULT ('whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

ALTER TABLE "SeparationJob" ADD COLUMN "webhookUrl" TEXT, ADD COLUMN "apiKeyId" INTEGER;
ALTER TABLE "VoiceConversionJob" ADD COLUMN "webhookUrl" TEXT, ADD COLUMN "apiKeyId" INTEGER;
ALTER TABLE "VoiceBlendJob" ADD COLUMN "webhookUrl" TEXT, ADD COLUMN "apiKeyId" INTEGER;

ALTER TABLE "SeparationJob" ADD CONSTRAINT "SeparationJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "VoiceConversionJob" ADD CONSTRAINT "VoiceConversionJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "VoiceBlendJob" ADD CONSTRAINT "VoiceBlendJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- The outbox: written in the transaction that ends the job, so an end is never without its delivery.
CREATE TABLE "WebhookDelivery" (
    "id" SERIAL NOT NULL,
    "jobKind" TEXT NOT NULL,
    "rowId" INTEGER NOT NULL,
    "event" "JobStatus" NOT NULL,
    "url" TEXT NOT NULL,
    "apiKeyId" INTEGER,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "lastStatusCode" INTEGER,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" TIMESTAMPTZ(6),
    "failedAt" TIMESTAMPTZ(6),
    CONSTRAINT "WebhookDelivery_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "WebhookDelivery_jobKind_rowId_key" ON "WebhookDelivery"("jobKind", "rowId");
CREATE INDEX "WebhookDelivery_deliveredAt_failedAt_id_idx" ON "WebhookDelivery"("deliveredAt", "failedAt", "id");
ALTER TABLE "WebhookDelivery" ADD CONSTRAINT "WebhookDelivery_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
