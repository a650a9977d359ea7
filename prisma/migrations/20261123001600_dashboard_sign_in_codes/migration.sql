-- One-time codes that sign a browser in to the web dashboard (the link `mixdown up` prints):
-- the code's sha256 and the API key sealed with a key derived from the code; a row is deleted
-- when redeemed and is useless once expiresAt has passed.
CREATE TABLE "DashboardSignInCode" (
    "id" SERIAL NOT NULL,
    "codeHash" TEXT NOT NULL,
    "apiKeyId" INTEGER NOT NULL,
    "sealedKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(6) NOT NULL,
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DashboardSignInCode_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "DashboardSignInCode_codeHash_key" ON "DashboardSignInCode"("codeHash");
CREATE INDEX "DashboardSignInCode_expiresAt_idx" ON "DashboardSignInCode"("expiresAt");

ALTER TABLE "DashboardSignInCode" ADD CONSTRAINT "DashboardSignInCode_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE CASCADE ON UPDATE CASCADE;
