-- Pipelines (issue 56): a job kind `pipeline` that chains steps, each run as an ordinary job of
-- its kind (a separation, a conversion). The pipeline's own file is its upload; each step's job
-- owns its input (a copy) and its outputs.
CREATE TABLE "Pipeline" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "preset" TEXT,
    "inputType" TEXT NOT NULL,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "audioSeconds" DOUBLE PRECISION,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),
    "inputsExpiredAt" TIMESTAMPTZ(6),
    "outputsExpiredAt" TIMESTAMPTZ(6),
    "webhookUrl" TEXT,
    "apiKeyId" INTEGER,

    CONSTRAINT "Pipeline_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "Pipeline_callerId_id_idx" ON "Pipeline"("callerId", "id");
CREATE INDEX "Pipeline_status_enqueuedAt_idx" ON "Pipeline"("status", "enqueuedAt");
CREATE INDEX "Pipeline_outputsExpiredAt_jobEndTime_idx" ON "Pipeline"("outputsExpiredAt", "jobEndTime");
CREATE INDEX "Pipeline_inputsExpiredAt_jobEndTime_idx" ON "Pipeline"("inputsExpiredAt", "jobEndTime");

ALTER TABLE "Pipeline" ADD CONSTRAINT "Pipeline_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "Pipeline" ADD CONSTRAINT "Pipeline_apiKeyId_fkey" FOREIGN KEY ("apiKeyId") REFERENCES "ApiKey"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- A pipeline's steps, in order. `jobId` is the id of the ordinary job the step runs as (in the
-- table of `kind`), set once, in the transaction that creates that job: a step runs at most once.
CREATE TABLE "PipelineStep" (
    "id" SERIAL NOT NULL,
    "pipelineId" INTEGER NOT NULL,
    "index" INTEGER NOT NULL,
    "step" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "options" JSONB NOT NULL,
    "jobId" INTEGER,

    CONSTRAINT "PipelineStep_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "PipelineStep_pipelineId_index_key" ON "PipelineStep"("pipelineId", "index");

ALTER TABLE "PipelineStep" ADD CONSTRAINT "PipelineStep_pipelineId_fkey" FOREIGN KEY ("pipelineId") REFERENCES "Pipeline"("id") ON DELETE CASCADE ON UPDATE CASCADE;
