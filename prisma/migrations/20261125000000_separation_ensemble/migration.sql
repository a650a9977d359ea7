-- An ensemble's algorithm: set when `model` names several models (a comma-separated list), from the
-- create's `ensemble` field or, for a job that named no model, the worker's setting once the job
-- succeeded. Null: one model (or none named and not run yet).
ALTER TABLE "SeparationJob" ADD COLUMN "ensemble" TEXT;
