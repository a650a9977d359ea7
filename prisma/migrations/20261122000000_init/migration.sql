-- CreateEnum
CREATE TYPE "JobStatus" AS ENUM ('running', 'success', 'error', 'cancelled');

-- CreateEnum
CREATE TYPE "SeparationKind" AS ENUM ('vocal_separation', 'stem_split');

-- CreateEnum
CREATE TYPE "VoiceModelState" AS ENUM ('pending', 'ready', 'failed');

-- CreateTable
CREATE TABLE "Caller" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Caller_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "keyHash" TEXT NOT NULL,
    "keyPrefix" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMPTZ(6),

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SeparationJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "kind" "SeparationKind" NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "inputFileName" TEXT,
    "vocalKey" TEXT,
    "lossyVocalKey" TEXT,
    "backingKey" TEXT,
    "stems" JSONB NOT NULL DEFAULT '[]',
    "lossyStems" JSONB NOT NULL DEFAULT '[]',
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),

    CONSTRAINT "SeparationJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VoiceModel" (
    "id" SERIAL NOT NULL,
    "ownerId" INTEGER,
    "title" TEXT NOT NULL,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "imageUrl" TEXT,
    "demoUrl" TEXT,
    "twitterLink" TEXT,
    "instagramLink" TEXT,
    "tiktokLink" TEXT,
    "spotifyLink" TEXT,
    "youtubeLink" TEXT,
    "architecture" TEXT NOT NULL,
    "sampleRate" INTEGER NOT NULL,
    "fileKey" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "slug" TEXT,
    "state" "VoiceModelState" NOT NULL DEFAULT 'ready',
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VoiceModel_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VoiceConversionJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "voiceModelId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "inputKey" TEXT NOT NULL,
    "inputFormat" TEXT NOT NULL,
    "backingKey" TEXT,
    "params" JSONB NOT NULL DEFAULT '{}',
    "outputKey" TEXT,
    "lossyOutputKey" TEXT,
    "recombinedKey" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),

    CONSTRAINT "VoiceConversionJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VoiceBlendJob" (
    "id" SERIAL NOT NULL,
    "callerId" INTEGER NOT NULL,
    "model1Id" INTEGER NOT NULL,
    "model2Id" INTEGER NOT NULL,
    "model3Id" INTEGER,
    "model4Id" INTEGER,
    "alpha" DOUBLE PRECISION NOT NULL,
    "alpha2" DOUBLE PRECISION NOT NULL,
    "alpha3" DOUBLE PRECISION,
    "alpha4" DOUBLE PRECISION,
    "title" TEXT NOT NULL,
    "outputModelId" INTEGER NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'running',
    "progress" INTEGER NOT NULL DEFAULT 0,
    "errorMessage" TEXT,
    "enqueuedAt" TIMESTAMPTZ(6),
    "createdAt" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobStartTime" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "jobEndTime" TIMESTAMPTZ(6),

    CONSTRAINT "VoiceBlendJob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_keyHash_key" ON "ApiKey"("keyHash");

-- CreateIndex
CREATE INDEX "ApiKey_callerId_idx" ON "ApiKey"("callerId");

-- CreateIndex
CREATE INDEX "SeparationJob_callerId_kind_id_idx" ON "SeparationJob"("callerId", "kind", "id");

-- CreateIndex
CREATE INDEX "SeparationJob_status_enqueuedAt_idx" ON "SeparationJob"("status", "enqueuedAt");

-- CreateIndex
CREATE UNIQUE INDEX "VoiceModel_slug_key" ON "VoiceModel"("slug");

-- CreateIndex
CREATE INDEX "VoiceModel_ownerId_id_idx" ON "VoiceModel"("ownerId", "id");

-- CreateIndex
CREATE INDEX "VoiceConversionJob_callerId_id_idx" ON "VoiceConversionJob"("callerId", "id");

-- CreateIndex
CREATE INDEX "VoiceConversionJob_status_enqueuedAt_idx" ON "VoiceConversionJob"("status", "enqueuedAt");

-- CreateIndex
CREATE UNIQUE INDEX "VoiceBlendJob_outputModelId_key" ON "VoiceBlendJob"("outputModelId");

-- CreateIndex
CREATE INDEX "VoiceBlendJob_callerId_id_idx" ON "VoiceBlendJob"("callerId", "id");

-- CreateIndex
CREATE INDEX "VoiceBlendJob_status_enqueuedAt_idx" ON "VoiceBlendJob"("status", "enqueuedAt");

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SeparationJob" ADD CONSTRAINT "SeparationJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "VoiceModel" ADD CONSTRAINT "VoiceModel_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "VoiceConversionJob" ADD CONSTRAINT "VoiceConversionJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "VoiceConversionJob" ADD CONSTRAINT "VoiceConversionJob_voiceModelId_fkey" FOREIGN KEY ("voiceModelId") REFERENCES "VoiceModel"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "VoiceBlendJob" ADD CONSTRAINT "VoiceBlendJob_callerId_fkey" FOREIGN KEY ("callerId") REFERENCES "Caller"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "VoiceBlendJob" ADD CONSTRAINT "VoiceBlendJob_outputModelId_fkey" FOREIGN KEY ("outputModelId") REFERENCES "VoiceModel"("id") ON DELETE CASCADE ON UPDATE CASCADE;
