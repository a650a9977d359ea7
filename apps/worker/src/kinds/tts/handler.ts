import { join, resolve } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import { jobOutputKeys, type ObjectStorage } from "@mixdown/storage";
import {
  checkLanguage,
  festivalCanSpeak,
  LanguageUnavailableError,
  NothingToSpeakError,
  resolveSynthesizer,
  SynthesizerMissingError,
  synthesizeSpeech,
  synthesizerFor,
  installedLanguages,
  listPiperVoices,
  piperVoiceFor,
  type InstalledPiperVoice,
  type SynthesizerChoice,
  type SynthesizerName,
} from "@mixdown/voice/speech";
import type { JobHandler } from "../../run-job.ts";
import type { VoiceConversionPool } from "../voice-conversion/protocol.ts";
import type { VoiceModelFiles } from "../../voice-model-files.ts";
import { CONVERSION_DEFAULTS } from "@mixdown/voice/conversion-params";
import type { WorkerKind } from "../context.ts";

export interface TtsJobDeps {
  storage: ObjectStorage;
  /** TTS_SYNTHESIZER. */
  synthesizer: SynthesizerChoice;
  /** TTS_PIPER_DIR, resolved: the Piper voices `auto` and `piper` speak with. */
  piperDir: string;
  pool: VoiceConversionPool;
  modelFiles: VoiceModelFiles;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
}

/** Share of the progress bar the synthesis takes; the conversion takes the rest. */
const SPEAK_SHARE = 0.3;

/**
 * Speaks the row's text with the base synthesizer (sentence by sentence, into one WAV at the
 * voice model's rate), then converts that speech with the voice model in a conversion thread,
 * exactly as a voice conversion of an upload with the default options, and uploads the outputs.
 */
export function ttsHandler(deps: TtsJobDeps): JobHandler<"tts"> {
  return {
    async run({ kind, row, rowId, workDir, log, reportProgress, signal }) {
      const model = row.voiceModel;
      if (model.state !== "ready" || !model.fileKey)
        throw new JobFailure("bad-input", `Voice model ${model.id} is not usable (state ${model.state})`);
      const speechPath = join(workDir, "speech.wav");
      let spoken;
      let piper: InstalledPiperVoice | undefined;
      try {
        // The API checked the language against its own machine's synthesizers; this one may differ.
        const language = row.language === null ? null : checkLanguage(row.language, await installedLanguages(deps.piperDir));
        // A Piper voice for the language speaks first where the setting allows it (and is installed).
        piper =
          deps.synthesizer === "auto" || deps.synthesizer === "piper"
            ? piperVoiceFor((await listPiperVoices(deps.piperDir)).voices, language)
            : undefined;
        let synthesizer: SynthesizerName;
        if (piper) synthesizer = "piper";
        else if (deps.synthesizer === "piper")
          throw new SynthesizerMissingError(
            `TTS_SYNTHESIZER=piper and no Piper voice in ${deps.piperDir} speaks ${language ?? "English"} (./mixdown.sh models pull piper-<voice>)`,
          );
        else {
          const choice = deps.synthesizer;
          synthesizer = await synthesizerFor(choice, language);
          // Festival's voice is English: a text in another script goes to espeak-ng where the setting allows it.
          if (language === null && synthesizer === "festival" && choice === "auto" && !festivalCanSpeak(row.inputText))
            synthesizer = await resolveSynthesizer("espeak-ng").catch(() => synthesizer);
        }
        spoken = await synthesizeSpeech(row.inputText, speechPath, {
          synthesizer,
          ...(piper ? { piperModelPath: piper.modelPath, piperConfig: piper.config } : {}),
          ...(language === null ? {} : { language }),
          workDir,
          sampleRate: model.sampleRate,
          signal,
          onProgress: (f) => reportProgress(f * SPEAK_SHARE),
        });
      } catch (err) {
        if (signal.aborted) throw err;
        // Retrying cannot install a synthesizer, nor find words in a text without any.
        if (err instanceof SynthesizerMissingError) throw new JobFailure("permanent", err.message);
        if (err instanceof NothingToSpeakError) throw new JobFailure("bad-input", `inputTtsText: ${err.message}`);
        if (err instanceof LanguageUnavailableError) throw new JobFailure("bad-input", err.message);
        throw err;
      }
      const synthesizerName = piper ? `piper:${piper.name}` : spoken.synthesizer;
      log.info({ synthesizer: synthesizerName, pieces: spoken.pieces, seconds: spoken.seconds }, "spoken");

      const modelPath = await deps.modelFiles.resolve(model);
      const indexPath = await deps.modelFiles.resolveIndex(model);
      signal.throwIfAborted();
      const result = await deps.pool.run(
        {
          inputPath: speechPath,
          modelPath,
          ...(indexPath ? { indexPath } : {}),
          sampleRate: model.sampleRate,
          params: CONVERSION_DEFAULTS,
          outDir: join(workDir, "out"),
          lossless: deps.losslessFormat,
          mp3BitrateKbps: deps.lossyBitrateKbps,
        },
        (f) => reportProgress(SPEAK_SHARE + f * (1 - SPEAK_SHARE)),
        signal,
      );
      log.info({ seconds: result.seconds, frames: result.frames }, "converted");

      const stored = jobOutputKeys(kind, rowId);
      const outputKey = stored.file(`output.${deps.losslessFormat}`);
      const lossyOutputKey = stored.file("output.mp3");
      await Promise.all([
        deps.storage.putFile(outputKey, result.output),
        deps.storage.putFile(lossyOutputKey, result.lossyOutput),
      ]);
      // The spoken output's length is what the job counts in its key's usage.
      return { outputKey, lossyOutputKey, synthesizer: synthesizerName, audioSeconds: result.frames / result.sampleRate };
    },
    async discard({ kind, rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys(kind, rowId).prefix);
    },
  };
}

export const ttsKind: WorkerKind<"tts"> = {
  start: ({ config, storage, modelsDir, modelFiles, output, voiceConversionPool }) =>
    ttsHandler({
      storage,
      synthesizer: config.TTS_SYNTHESIZER,
      piperDir: resolve(modelsDir, config.TTS_PIPER_DIR),
      pool: voiceConversionPool(),
      modelFiles,
      ...output,
    }),
};
