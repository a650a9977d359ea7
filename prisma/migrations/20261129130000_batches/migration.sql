-- Batches (issue 55): one create making a separation job per file. The jobs stay ordinary
-- rows; `batchId` names the batch that made them.
CREATE TABLE "Batch" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "apiKeyId" INTEGER,
    "kind" "SeparationKind" NOT NULL,
    "rejected" JSONB NOT NULL DEFAULT '[]',
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Batch_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "Batch_callerId_id_idx" ON "Batch"("callerId", "id");

ALTER TABLE "Batch" ADD CONSTRAINT "Batch_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "SeparationJob" ADD COLUMN "batchId" INTEGER;
CREATE INDEX "SeparationJob_batchId_idx" ON "SeparationJob"("batchId");
ALTER TABLE "SeparationJob" ADD CONSTRAINT "SeparationJob_batchId_fkey" FOREIGN KEY ("batchId") REFERENCES "Batch"("id") ON DELETE SET NULL ON UPDATE CASCADE;
