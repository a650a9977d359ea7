-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "readsPerMinute" INTEGER,
ADD COLUMN     "writesPerMinute" INTEGER;
