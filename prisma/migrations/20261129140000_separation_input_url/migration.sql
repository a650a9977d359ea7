-- A batch made from links (issue 55): a separation whose input is a link the worker downloads
-- before it runs, into the job's usual upload key. The link stays as where the input came from;
-- null for a job made from an upload.
ALTER TABLE "SeparationJob" ADD COLUMN "inputUrl" TEXT;
