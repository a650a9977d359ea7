-- Audio analyses (issue 55): a job kind `audio-analysis` whose result (key, tempo and beats,
-- loudness, duration) is kept in the row as JSON; its only file is the upload.
CREATE TABLE "AudioAnalysisJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "audioSeconds" DOUBLE PRECISION,
    "analysis" JSONB,
    "analyzer" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "inputsExpiredAt" TIMESTAMPTZ(6),
    "outputsExpiredAt" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "AudioAnalysisJob_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "AudioAnalysisJob_callerId_id_idx" ON "AudioAnalysisJob"("callerId", "id");
CREATE INDEX "AudioAnalysisJob_status_enqueuedAt_idx" ON "AudioAnalysisJob"("status", "enqueuedAt");
CREATE INDEX "AudioAnalysisJob_outputsExpiredAt_jobEndTime_idx" ON "AudioAnalysisJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "AudioAnalysisJob_inputsExpiredAt_jobEndTime_idx" ON "AudioAnalysisJob"("inputsExpiredAt", "jobEndTime");

ALTER TABLE "AudioAnalysisJob" ADD CONSTRAINT "AudioAnalysisJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "AudioAnalysisJob" ADD CONSTRAINT "AudioAnalysisJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- A separation's `analyze=true`: its input and each stem analysed after the separation.
ALTER TABLE "SeparationJob" ADD COLUMN "analyze" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "SeparationJob" ADD COLUMN "analysis" JSONB;
