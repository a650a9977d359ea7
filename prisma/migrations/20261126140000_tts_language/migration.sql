-- Text to speech in a chosen language (issue 33): the language asked for; null is the default, English.
ALTER TABLE "TtsJob" ADD COLUMN "language" TEXT;
