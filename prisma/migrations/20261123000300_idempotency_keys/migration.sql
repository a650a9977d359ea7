-- Idempotency-Key of creates: one row per (caller, key), claimed before the create runs and
-- pointed at the record it made once it succeeds. The unique index is what makes two concurrent
-- requests with one key race safely: only one insert wins.
CREATE TABLE "IdempotencyKey" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "route" TEXT NOT NULL,
    "resourceKind" TEXT,
    "resourceId" INTEGER,
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "IdempotencyKey_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "IdempotencyKey_callerId_key_key" ON "IdempotencyKey"("callerId", "key");
CREATE INDEX "IdempotencyKey_createdAt_idx" ON "IdempotencyKey"("createdAt");

ALTER TABLE "IdempotencyKey" ADD CONSTRAINT "IdempotencyKey_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
