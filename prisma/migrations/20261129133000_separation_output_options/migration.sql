-- Output control per separation (issue 55): the lossless format, sample format, FLAC compression,
-- sample rate and stems a create asked for, resolved at create (null: a job that asked for none,
-- written as always), and what the worker wrote, once the job succeeded.
ALTER TABLE "SeparationJob" ADD COLUMN "outputOptions" JSONB;
ALTER TABLE "SeparationJob" ADD COLUMN "output" JSONB;
