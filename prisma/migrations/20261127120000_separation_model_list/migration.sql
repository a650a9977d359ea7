-- A separation's models as a list (issue 57): one name, or an ensemble's names in order, where
-- `model` held them comma-joined. A job that named none and has not run yet had null and now has
-- the empty list (a Prisma list cannot be null); its worker writes the setting's names on success.
ALTER TABLE "SeparationJob" ADD COLUMN "models" TEXT[] DEFAULT ARRAY[]::TEXT[];
UPDATE "SeparationJob" SET "models" = string_to_array("model", ',') WHERE "model" IS NOT NULL;
ALTER TABLE "SeparationJob" DROP COLUMN "model";
