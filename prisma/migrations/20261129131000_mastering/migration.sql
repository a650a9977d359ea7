-- Masterings (issue 56): a job kind `mastering` that masters an uploaded target to an uploaded
-- reference (Matchering's algorithm) or to a loudness target (ffmpeg's two-pass loudnorm).
CREATE TABLE "MasteringJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "referenceKey" TEXT,
    "referenceFormat" TEXT,
    "referenceFileName" TEXT,
    "targetLufs" DOUBLE PRECISION,
    "truePeakDb" DOUBLE PRECISION,
    "audioSeconds" DOUBLE PRECISION,
    "outputKey" TEXT,
    "output16BitKey" TEXT,
    "lossyOutputKey" TEXT,
    "loudnessBefore" JSONB,
    "loudnessAfter" JSONB,
    "processor" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "inputsExpiredAt" TIMESTAMPTZ(6),
    "outputsExpiredAt" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "MasteringJob_pkey" PRIMARY KEY ("id"),
    -- exactly one mode: a reference, or a loudness target
    CONSTRAINT "MasteringJob_mode_check" CHECK (("referenceKey" IS NULL) <> ("targetLufs" IS NULL))
);

CREATE INDEX "MasteringJob_callerId_id_idx" ON "MasteringJob"("callerId", "id");
CREATE INDEX "MasteringJob_status_enqueuedAt_idx" ON "MasteringJob"("status", "enqueuedAt");
CREATE INDEX "MasteringJob_outputsExpiredAt_jobEndTime_idx" ON "MasteringJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "MasteringJob_inputsExpiredAt_jobEndTime_idx" ON "MasteringJob"("inputsExpiredAt", "jobEndTime");

ALTER TABLE "MasteringJob" ADD CONSTRAINT "MasteringJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "MasteringJob" ADD CONSTRAINT "MasteringJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
