-- Instrument models: listed apart from voices (`GET /voice-models?instruments=true|false`).
ALTER TABLE "VoiceModel" ADD COLUMN "instrument" BOOLEAN NOT NULL DEFAULT false;
