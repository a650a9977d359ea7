-- Usage and quotas: seconds of audio each API key's successful jobs processed, counted once per
-- job, and an optional monthly quota per key.

-- A key's monthly quota in minutes of audio; null: none.
ALTER TABLE "ApiKey" ADD COLUMN "monthlyQuotaMinutes" INTEGER;

-- The seconds of audio a job counts: its input's duration (separations, conversions), found by the
-- API at create; for text to speech an estimate from the text at create, replaced by the spoken
-- output's duration when it succeeds. Null on rows created before this migration.
ALTER TABLE "SeparationJob" ADD COLUMN "audioSeconds" DOUBLE PRECISION;
ALTER TABLE "VoiceConversionJob" ADD COLUMN "audioSeconds" DOUBLE PRECISION;
ALTER TABLE "TtsJob" ADD COLUMN "audioSeconds" DOUBLE PRECISION;

-- One row per successful job, written in the transaction that ends it `success` (unique per job:
-- a retried or redelivered job is never counted twice). Kept when the job's row is deleted.
CREATE TABLE "UsageRecord" (
    "id" SERIAL NOT NULL,
    "jobKind" TEXT NOT NULL,
    "rowId" INTEGER NOT NULL,
    "callerId" INTEGER NOT NULL,
    "apiKeyId" INTEGER,
    "seconds" DOUBLE PRECISION NOT NULL,
    "endedAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "UsageRecord_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "UsageRecord_jobKind_rowId_key" ON "UsageRecord"("jobKind", "rowId");
CREATE INDEX "UsageRecord_apiKeyId_endedAt_idx" ON "UsageRecord"("apiKeyId", "endedAt");
CREATE INDEX "UsageRecord_callerId_endedAt_idx" ON "UsageRecord"("callerId", "endedAt");
ALTER TABLE "UsageRecord" ADD CONSTRAINT "UsageRecord_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "UsageRecord" ADD CONSTRAINT "UsageRecord_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
