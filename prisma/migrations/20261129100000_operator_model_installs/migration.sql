-- Operator keys and model installs from the API.

-- An operator key may install catalogue models (POST /model-installs) and read every key's usage
-- (GET /usage?all=true); `keys create --operator` makes one.
ALTER TABLE "ApiKey" ADD COLUMN "operator" BOOLEAN NOT NULL DEFAULT false;

-- One install of a model catalogue entry, run by a worker (the `model-install` kind): the row is
-- the job, `status` and `progress` as a job's.
CREATE TABLE "ModelInstall" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "summary" TEXT,
    "apiKeyId" INTEGER,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6),
    "jobEndTime" TIMESTAMPTZ(6),
    CONSTRAINT "ModelInstall_pkey" PRIMARY KEY ("id")
);
-- At most one install of a name runs at a time: a second request finds the running one.
CREATE UNIQUE INDEX "ModelInstall_name_running_key" ON "ModelInstall"("name") WHERE "status" = 'running';
CREATE INDEX "ModelInstall_status_id_idx" ON "ModelInstall"("status", "id");
ALTER TABLE "ModelInstall" ADD CONSTRAINT "ModelInstall_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;
