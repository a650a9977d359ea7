import type { TtsJobRepository, TtsJobWithModel, VoiceModelRepository } from "@mixdown/db";
import type { RecordPresenter, TtsJobRecord } from "@mixdown/records";
import type { VoiceAssets } from "@mixdown/voice/assets";
import { checkLanguage, LanguageUnavailableError } from "@mixdown/voice/speech-synthesizers";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { checkConvertibleModel } from "../voice-conversion/service.ts";
import type { TtsForm } from "./routes.ts";
import type { UsageQuota } from "../../usage/quota.ts";

/**
 * Characters of text a second of speech takes, at the low end of what the synthesizers speak
 * (Festival and espeak-ng at their default rates say 14 to 17): a text's estimate errs long.
 */
const TTS_CHARACTERS_PER_SECOND = 12;

/**
 * The seconds a text-to-speech job holds of its key's quota while it runs: an estimate from the
 * text, since its speech is not spoken yet. Once it succeeds the spoken output's duration counts.
 */
export function estimateTtsSeconds(text: string): number {
  return Math.max(1, Math.ceil(text.length / TTS_CHARACTERS_PER_SECOND));
}

/**
 * What the form's schema cannot say of the text to speak (its presence and length it checks): not
 * only white space, no NUL characters, something to say (letters or digits). Throws a 422 naming
 * the rule; returns the text trimmed.
 */
export function ttsText(raw: string): string {
  if (raw.trim() === "") throw unprocessable("inputTtsText is empty: there is no text to speak");
  if (raw.includes("\0")) throw unprocessable("inputTtsText must be text (it contains NUL characters)");
  if (!/[\p{L}\p{N}]/u.test(raw)) throw unprocessable("inputTtsText has nothing to speak: it has no letters or digits");
  return raw.trim();
}

/**
 * The `language` field checked against the languages this server's synthesizers speak (a 422
 * naming them), lowercased; absent or empty is null (the default, English). Where the API's
 * machine has no synthesizer to ask, a well-formed tag is taken and the worker checks it.
 */
export function parseTtsLanguage(raw: string | undefined, available: readonly string[]): string | null {
  if (raw === undefined || raw.trim() === "") return null;
  if (available.length === 0) {
    if (!/^[a-z]{2,3}(-[a-z0-9]{1,8})*$/i.test(raw.trim()) || raw.length > 35)
      throw unprocessable(`language ${JSON.stringify(raw)} is not a language tag (for example en, de, pt-br)`);
    return raw.trim().toLowerCase();
  }
  try {
    return checkLanguage(raw, available);
  } catch (err) {
    if (err instanceof LanguageUnavailableError) throw unprocessable(err.message);
    throw err;
  }
}

export interface TtsServiceDeps {
  tts: TtsJobRepository;
  models: VoiceModelRepository;
  /** Files RVC models need on this server: a job that could not run is refused at create. */
  assets: Pick<VoiceAssets, "missingFor">;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  /** The languages the synthesizers on this machine speak (installedLanguages); empty when it has none. */
  languages: () => Promise<string[]>;
  quota: UsageQuota;
}

/** Text-to-speech jobs: the text is checked and stored on the row; nothing is uploaded. */
export class TtsService extends CallerJobs<TtsJobWithModel, TtsJobRecord> {
  constructor(private readonly deps: TtsServiceDeps) {
    super({
      kind: "tts",
      noun: "tts job",
      rows: deps.tts,
      present: (row) => deps.presenter.ttsJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** A create, its fields already read by the route's schema (TtsForm). */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: TtsForm): Promise<TtsJobRecord> {
    const { voiceModelId } = form;
    const inputText = ttsText(form.inputTtsText);
    const language = parseTtsLanguage(form.language, await this.deps.languages());
    await checkConvertibleModel(this.deps, callerId, voiceModelId);
    const audioSeconds = estimateTtsSeconds(inputText);
    const row = await this.deps.quota.admit(apiKeyId, audioSeconds, (db) =>
      this.deps.tts.create({ callerId, apiKeyId, webhookUrl, voiceModelId, inputText, language, audioSeconds }, db),
    );
    await this.deps.submitter.submit({ queue: "tts", payload: { jobId: row.id } }, () => this.deps.tts.markEnqueued(row.id));
    return this.deps.presenter.ttsJob(row);
  }
}
