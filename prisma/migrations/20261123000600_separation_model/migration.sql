-- The separation model a job runs with: the create's `model` field, else (written when the job
-- succeeds) the one the worker's settings chose. Null: none named and not run yet.
ALTER TABLE "SeparationJob" ADD COLUMN "model" TEXT;
