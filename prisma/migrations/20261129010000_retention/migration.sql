-- Retention (RETENTION_*_MINUTES): when the sweep deleted a job's inputs and its outputs.
ALTER TABLE "SeparationJob" ADD COLUMN "inputsExpiredAt" TIMESTAMPTZ(6), ADD COLUMN "outputsExpiredAt" TIMESTAMPTZ(6);
ALTER TABLE "VoiceConversionJob" ADD COLUMN "inputsExpiredAt" TIMESTAMPTZ(6), ADD COLUMN "outputsExpiredAt" TIMESTAMPTZ(6);
-- A TTS job has no uploaded input (its text is on the row).
ALTER TABLE "TtsJob" ADD COLUMN "outputsExpiredAt" TIMESTAMPTZ(6);

-- The sweep's reads: ended jobs whose files are still stored, oldest end first.
CREATE INDEX "SeparationJob_outputsExpiredAt_jobEndTime_idx" ON "SeparationJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "SeparationJob_inputsExpiredAt_jobEndTime_idx" ON "SeparationJob"("inputsExpiredAt", "jobEndTime");
CREATE INDEX "VoiceConversionJob_outputsExpiredAt_jobEndTime_idx" ON "VoiceConversionJob"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "VoiceConversionJob_inputsExpiredAt_jobEndTime_idx" ON "VoiceConversionJob"("inputsExpiredAt", "jobEndTime");
CREATE INDEX "TtsJob_outputsExpiredAt_jobEndTime_idx" ON "TtsJob"("outputsExpiredAt", "jobEndTime");
