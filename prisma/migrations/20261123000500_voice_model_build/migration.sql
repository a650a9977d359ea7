-- Native voices are built by the worker (`voice-model-build` job) from a stored reference recording.
ALTER TABLE "VoiceModel" ADD COLUMN "referenceKey" TEXT,
ADD COLUMN "buildEnqueuedAt" TIMESTAMPTZ(6),
ADD COLUMN "buildError" TEXT;
