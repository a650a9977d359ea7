-- A deletion under way (DELETE of a job or a voice model, `callers purge`): written before the
-- first file is deleted and removed in the transaction that deletes the rows, so a deletion cut
-- short (the process killed, object storage down) is finished by the next sweep.
CREATE TABLE "PendingDeletion" (
    "id" SERIAL NOT NULL,
    "resourceKind" TEXT NOT NULL,
    "resourceId" INTEGER NOT NULL,
    "keys" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "prefixes" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PendingDeletion_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "PendingDeletion_resourceKind_resourceId_key" ON "PendingDeletion"("resourceKind", "resourceId");
CREATE INDEX "PendingDeletion_updatedAt_idx" ON "PendingDeletion"("updatedAt");
