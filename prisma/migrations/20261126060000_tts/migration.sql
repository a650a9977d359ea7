-- Text-to-speech jobs (issue 33): an inference job of type `tts`. The text is spoken by the base
-- synthesizer (Festival's HTS voice, or espeak-ng) and converted with the voice model.
CREATE TABLE "TtsJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "voiceModelId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputText" TEXT NOT NULL,
    "synthesizer" TEXT,
    "outputKey" TEXT,
    "lossyOutputKey" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "TtsJob_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "TtsJob_callerId_id_idx" ON "TtsJob"("callerId", "id");
CREATE INDEX "TtsJob_status_enqueuedAt_idx" ON "TtsJob"("status", "enqueuedAt");

ALTER TABLE "TtsJob" ADD CONSTRAINT "TtsJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "TtsJob" ADD CONSTRAINT "TtsJob_voiceModelId_fkey" FOREIGN KEY ("voiceModelId") REFERENCES "VoiceModel"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "TtsJob" ADD CONSTRAINT "TtsJob_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
