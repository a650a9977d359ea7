-- Vocal repairs (issue 56): a job kind `vocal-repair`, an uploaded vocal (or a mix whose vocal is
-- isolated first) repaired with the steps the caller chose (denoise, dereverb).
CREATE TABLE "VocalRepairJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "audioSeconds" DOUBLE PRECISION,
    "steps" TEXT[],
    "isolateVocal" BOOLEAN NOT NULL DEFAULT false,
    "models" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "outputKey" TEXT,
    "lossyOutputKey" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "inputsExpiredAt" TIMESTAMPTZ(6),
    "outputsExpiredAt" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "VocalRepairJob_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "VocalRepairJob_callerId_id_idx" ON "VocalRepairJob"("callerId", "id");
CREATE INDEX "VocalRepairJob_status_enqueuedAt_idx" ON "VocalRepairJob"("status", "enqueuedAt");
CREATE INDEX "VocalRepairJob_outputsExpiredAt_jobEndTime_idx" ON "VocalRepairJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "VocalRepairJob_inputsExpiredAt_jobEndTime_idx" ON "VocalRepairJob"("inputsExpiredAt", "jobEndTime");

ALTER TABLE "VocalRepairJob" ADD CONSTRAINT "VocalRepairJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "VocalRepairJob" ADD CONSTRAINT "VocalRepairJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
