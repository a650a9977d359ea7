-- Harmonies (issue 56): a job kind `harmony`, an uploaded vocal (or a mix whose vocal is isolated
-- first) given a harmony voice a third or a sixth above or below, in the key the caller gave or the
-- worker found.
CREATE TABLE "HarmonyJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "audioSeconds" DOUBLE PRECISION,
    "interval" TEXT NOT NULL,
    "direction" TEXT NOT NULL,
    "requestedKey" TEXT,
    "isolateVocal" BOOLEAN NOT NULL DEFAULT false,
    "key" TEXT,
    "keyConfidence" DOUBLE PRECISION,
    "notes" INTEGER,
    "models" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "harmonyKey" TEXT,
    "lossyHarmonyKey" TEXT,
    "mixKey" TEXT,
    "lossyMixKey" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "inputsExpiredAt" TIMESTAMPTZ(6),
    "outputsExpiredAt" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "HarmonyJob_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "HarmonyJob_interval_check" CHECK ("interval" IN ('third', 'sixth')),
    CONSTRAINT "HarmonyJob_direction_check" CHECK ("direction" IN ('above', 'below'))
);

CREATE INDEX "HarmonyJob_callerId_id_idx" ON "HarmonyJob"("callerId", "id");
CREATE INDEX "HarmonyJob_status_enqueuedAt_idx" ON "HarmonyJob"("status", "enqueuedAt");
CREATE INDEX "HarmonyJob_outputsExpiredAt_jobEndTime_idx" ON "HarmonyJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "HarmonyJob_inputsExpiredAt_jobEndTime_idx" ON "HarmonyJob"("inputsExpiredAt", "jobEndTime");

ALTER TABLE "HarmonyJob" ADD CONSTRAINT "HarmonyJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "HarmonyJob" ADD CONSTRAINT "HarmonyJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
