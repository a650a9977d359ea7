import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Config } from "@mixdown/config";
import type { PrismaClient, VoiceModelRepository } from "@mixdown/db";
import type { RecordPresenter } from "@mixdown/records";
import type { ObjectStorage } from "@mixdown/storage";
import type { VoiceAssets } from "@mixdown/voice/assets";
import type { FastifyBaseLogger } from "fastify";
import type { AppContext } from "../app-context.ts";
import type { CallerDeletions } from "../jobs/caller-deletions.ts";
import type { JobCancels } from "../jobs/job-cancels.ts";
import type { JobSubmitter } from "../jobs/job-submitter.ts";
import type { UsageQuota } from "../usage/quota.ts";

/** What the app holds that a kind's service is built from (`buildApp` makes it once). */
export interface ApiKindDeps {
  config: Config;
  prisma: PrismaClient;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  voiceModels: VoiceModelRepository;
  /** Files RVC models need on this server: a job that could not run is refused at create. */
  voiceAssets: Pick<VoiceAssets, "missingFor">;
  /** API keys' monthly quotas, which creates with audio are held to. */
  quota: UsageQuota;
}

/**
 * A job kind as the API serves it: one folder under `kinds/` holds its routes and its service
 * (create, get, list, cancel). `kinds/index.ts` lists one per job table kind of the catalogue,
 * so a kind without one does not compile.
 */
export interface ApiKind<Service> {
  service(deps: ApiKindDeps): Service;
  /** Registered under `/api/kits/v1`, behind the caller's bearer key and the rate limit. */
  routes: FastifyPluginAsyncTypebox<{ ctx: AppContext; service: Service }>;
}
