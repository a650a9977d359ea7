-- Rendered media of voice models (demo clip and cover image), kept as storage keys.
ALTER TABLE "VoiceModel" ADD COLUMN "demoKey" TEXT,
ADD COLUMN "imageKey" TEXT,
ADD COLUMN "mediaEnqueuedAt" TIMESTAMPTZ(6),
ADD COLUMN "mediaError" TEXT;
