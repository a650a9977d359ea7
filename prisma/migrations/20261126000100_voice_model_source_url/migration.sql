-- Voice models imported from a link: the `voice-model-build` job downloads `sourceUrl`.
ALTER TABLE "VoiceModel" ADD COLUMN "sourceUrl" TEXT;
