import { Type, type Static } from "typebox";
import { JobStatus, Nullable, PaginationMeta, SignedUrl, Timestamp } from "./fields.ts";

export const StemEntry = Type.Object({
  instrument: Type.String({
    description:
      "e.g. vocals, backing, drums, bass, other, harmony, reverb. A vocal separation's stems are vocals (the lead vocal, dry), harmony, reverb and backing, adding up to the input; its vocal URL is the whole vocal (vocals + harmony + reverb)",
  }),
  url: Type.String({ description: "Signed download URL" }),
});

const jobExtras = {
  progress: Type.Integer({ minimum: 0, maximum: 100, description: "Percent done" }),
  errorMessage: Nullable(Type.String({ description: "Why the job failed (status `error`)" })),
};

/** When a job's outputs are deleted by the retention sweep (RETENTION_OUTPUT_MINUTES): every kind with audio outputs has both. */
const outputRetention = {
  outputsExpireAt: Type.Union([Timestamp, Type.Null()], {
    description:
      "When the job's output files are deleted (RETENTION_OUTPUT_MINUTES after its end): from then on its URL fields are null and its stem lists empty. null while the job runs, or when the server keeps outputs for good",
  }),
  outputsExpiredAt: Type.Union([Timestamp, Type.Null()], {
    description:
      "When the job's output files were deleted by the retention sweep (its URL fields are null since); null while they are stored",
  }),
};

/** What an analysis found in one piece of audio: an audio analysis job's result, and (`analyze=true`) a separation's per stem. */
export const AudioAnalysisResult = Type.Object(
  {
    durationSeconds: Type.Number({ description: "Seconds of audio analysed" }),
    key: Nullable(
      Type.Object(
        {
          key: Type.String({
            description: "The tonic, as Essentia names it: C, C#, D, Eb, E, F, F#, G, Ab, A, Bb or B",
            examples: ["F#"],
          }),
          scale: Type.Union([Type.Literal("major"), Type.Literal("minor")]),
          confidence: Type.Number({
            description:
              "Essentia KeyExtractor's strength: the correlation of the audio's chroma (HPCP) with the key's profile, 0-1",
          }),
        },
        { description: "The key, by Essentia's KeyExtractor (its defaults: the `bgate` profile); null for silence" },
      ),
    ),
    tempo: Nullable(
      Type.Object(
        {
          bpm: Type.Number({ description: "Beats per minute (40-208)" }),
          confidence: Type.Number({
            description:
              "Essentia RhythmExtractor2013's (multifeature) confidence, 0-5.32: below 1.5 very low, 1.5-3.5 low to fair, above 3.5 excellent",
          }),
          beats: Type.Array(Type.Number(), { description: "The beat positions, seconds from the start" }),
        },
        {
          description:
            "The tempo and beat grid, by Essentia's RhythmExtractor2013 (multifeature beat tracker); null for silence or fewer than two beats",
        },
      ),
    ),
    loudness: Type.Object(
      {
        integratedLufs: Nullable(
          Type.Number({
            description:
              "Integrated loudness (EBU R128 / ITU-R BS.1770-4), LUFS, to 0.1; null when nothing passes the -70 LUFS gate (silence)",
          }),
        ),
        loudnessRangeLu: Type.Number({ description: "Loudness range (EBU Tech 3342), LU, to 0.1" }),
        truePeakDbtp: Nullable(
          Type.Number({ description: "True peak over the channels (BS.1770-4 Annex 2), dBTP, to 0.1; null for digital silence" }),
        ),
      },
      { description: "Loudness, measured by ffmpeg's ebur128 filter on the audio as uploaded (its own rate and channels)" },
    ),
  },
  { $id: "AudioAnalysis", description: "Key, tempo and beats, loudness and duration of a piece of audio" },
);
export type AudioAnalysisResult = Static<typeof AudioAnalysisResult>;

/** A separation's analyses (`analyze=true`): the input's and each published stem's. */
export const SeparationAnalysis = Type.Object(
  {
    input: Type.Ref("AudioAnalysis", { description: "The uploaded input's analysis" }),
    stems: Type.Array(
      Type.Object({
        instrument: Type.String({ description: "The stem, as `stemFileUrls` names it" }),
        analysis: Type.Ref("AudioAnalysis"),
      }),
      { description: "Each stem of `stemFileUrls`, in its order" },
    ),
  },
  {
    $id: "SeparationAnalysis",
    description: "Key, tempo and beats, loudness and duration of a separation's input and of each of its stems",
  },
);
export type SeparationAnalysis = {
  input: AudioAnalysisResult;
  stems: Array<{ instrument: string; analysis: AudioAnalysisResult }>;
};

export const SeparationJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("separate"),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    vocalAudioFileUrl: SignedUrl,
    lossyVocalAudioFileUrl: SignedUrl,
    backingAudioFileUrl: SignedUrl,
    stemFileUrls: Type.Array(StemEntry),
    lossyStemFileUrls: Type.Array(StemEntry),
    model: Nullable(
      Type.String({
        description:
          "The separation model: the one the create named, else (once the job succeeded) the one the server's settings chose; null while a job that named none waits. Several names, comma-separated (`vocals,stems`), are an ensemble",
      }),
    ),
    ensemble: Nullable(
      Type.String({
        description:
          "The algorithm combining an ensemble's models (`avg_wave`, `median_wave`, `min_mag`, `max_mag`, `avg_mag`, `uvr_max_spec`, `uvr_min_spec`) when `model` names several; null for one model",
      }),
    ),
    analysis: Type.Optional(
      Nullable(
        Type.Ref("SeparationAnalysis", {
          description:
            "Mixdown, only on a job created with `analyze=true` (absent otherwise): the input's and each stem's key, tempo and beats, loudness and duration; null until the job succeeded",
        }),
      ),
    ),
    output: Type.Optional(
      Nullable(
        Type.Object(
          {
            format: Type.Union([Type.Literal("wav"), Type.Literal("flac")], {
              description: "The lossless files' format (`stemFileUrls`, the vocal and backing URLs)",
            }),
            sampleFormat: Type.Union([Type.Literal("s16"), Type.Literal("s24"), Type.Literal("f32")], {
              description: "Their samples: 16-bit or 24-bit integer, or 32-bit float (WAV only)",
            }),
            compressionLevel: Nullable(
              Type.Integer({ minimum: 0, maximum: 12, description: "FLAC's compression level (0-12); null for WAV" }),
            ),
            sampleRate: Type.Integer({ description: "Their sample rate in Hz: the one asked, else the input's" }),
            stems: Type.Array(Type.String(), {
              description: "The stems published, as `stemFileUrls` names them, in its order",
            }),
          },
          {
            description:
              "Mixdown, only on a job created with an output option (`outputFormat`, `sampleFormat`, `compressionLevel`, `sampleRate`, `stems`; absent otherwise): what its lossless files are (format, sample format, FLAC level, sample rate) and which stems it kept; null until the job succeeded. The lossy (mp3) files stay as always, at the input's rate",
          },
        ),
      ),
    ),
    inputUrl: Type.Optional(
      Type.String({
        description:
          "Mixdown, only on a job made from a link (a batch's `urls`; absent otherwise): the link its input was downloaded from, by the worker, before the separation ran",
      }),
    ),
    ...jobExtras,
    ...outputRetention,
  },
  { $id: "SeparationJob", description: "A vocal separation or stem split job" },
);
export type SeparationJobRecord = Omit<Static<typeof SeparationJobRecord>, "analysis"> & {
  analysis?: SeparationAnalysis | null;
};

export const MissingVoiceAsset = Type.Object({
  asset: Type.Union([Type.Literal("contentvec"), Type.Literal("contentvec-v1"), Type.Literal("rmvpe")], {
    description:
      "`contentvec`: the 768-d ContentVec features RVC v2 models take; `contentvec-v1`: the 256-d form RVC v1 models take; `rmvpe`: the RMVPE pitch model (YIN is used without it)",
  }),
  setting: Type.String({ description: "The server setting naming where the file is looked for (VOICE_CONTENTVEC_MODEL, ...)" }),
  required: Type.Boolean({
    description:
      "True: conversions with the model cannot run without it; false: a recommendation (RMVPE under VOICE_PITCH_METHOD=auto)",
  }),
  install: Type.String({ description: "The command that installs it on the server, e.g. `./mixdown.sh models pull hubert`" }),
  message: Type.String({ description: "What is missing, what for, and the command, in one sentence" }),
});

export const VoiceModelRecord = Type.Object(
  {
    id: Type.Integer(),
    title: Type.String(),
    tags: Type.Array(Type.String()),
    imageUrl: Type.String({
      description:
        "Cover image: the owner's link, else a signed URL of the uploaded or generated PNG; until it is rendered, the stable `/voice-models/{id}/image` route (302 once it exists, 409 until then)",
    }),
    demoUrl: Type.String({
      description:
        "Demo clip (mp3, the reference phrase converted with the voice): the owner's link, else a signed URL; until it is rendered, the stable `/voice-models/{id}/demo` route (302 once it exists, 409 until then)",
    }),
    twitterLink: Nullable(Type.String()),
    instagramLink: Nullable(Type.String()),
    tiktokLink: Nullable(Type.String()),
    spotifyLink: Nullable(Type.String()),
    youtubeLink: Nullable(Type.String()),
    architecture: Type.String({ description: "`native` or `rvc`" }),
    sampleRate: Type.Integer(),
    state: Type.Union([Type.Literal("pending"), Type.Literal("ready"), Type.Literal("failed")]),
    usable: Type.Boolean({ description: "True when the model can be used for conversions and blends (state `ready`)" }),
    isUsable: Type.Boolean({ description: "The same as `usable`, under the name the hosted service's records use" }),
    instrument: Type.Boolean({
      description: "True for an instrument model (a performance in, an instrument's sound out), false for a voice",
    }),
    errorMessage: Nullable(
      Type.String({
        description:
          "Why a model built by the worker (from a reference recording, an RVC `.pth`, or a `modelUrl` link: not found, too large, a bad zip, not a model, an address refused) ended `failed` (null otherwise; a failed blend's reason is on its blender job)",
      }),
    ),
    public: Type.Boolean({ description: "True for the public catalogue, false for the caller's own models" }),
    createdAt: Timestamp,
    missingAssets: Type.Array(MissingVoiceAsset, {
      description:
        "What the model still needs on this server before conversions with it run as they should; empty when nothing is missing (always, for native voices). An RVC model needs the ContentVec model (`required`: a conversion create answers 422 naming the command until it is installed) and is better with the RMVPE pitch model (a recommendation, unless the server sets VOICE_PITCH_METHOD=rmvpe). `./mixdown.sh models pull hubert` / `rmvpe` install them",
    }),
  },
  { $id: "VoiceModel" },
);
export type VoiceModelRecord = Static<typeof VoiceModelRecord>;

export const VoiceConversionJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("infer"),
    voiceModelId: Type.Integer(),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    outputFileUrl: SignedUrl,
    lossyOutputFileUrl: SignedUrl,
    recombinedAudioFileUrl: SignedUrl,
    model: Type.Ref("VoiceModel"),
    ...jobExtras,
    ...outputRetention,
  },
  { $id: "VoiceConversionJob", description: "A voice conversion (inference) job" },
);
export type VoiceConversionJobRecord = Omit<Static<typeof VoiceConversionJobRecord>, "model"> & { model: VoiceModelRecord };

export const TtsJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("tts"),
    voiceModelId: Type.Integer(),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    outputFileUrl: SignedUrl,
    lossyOutputFileUrl: SignedUrl,
    model: Type.Ref("VoiceModel"),
    inputTtsText: Type.String({ description: "The text spoken, as sent" }),
    language: Nullable(
      Type.String({
        description:
          "The language the text is spoken in, as asked for (`language`, lowercase); null: the default, English (a Piper English voice where installed, else Festival's voice, else espeak-ng's en-us)",
      }),
    ),
    synthesizer: Nullable(
      Type.String({
        description:
          "The base synthesizer that spoke the text before the voice model converted it: `piper:<voice>` (a Piper voice installed on the worker), `festival` (Festival's HTS voice cmu_us_slt_arctic_hts) or `espeak-ng`; null until the job has run",
      }),
    ),
    ...jobExtras,
    ...outputRetention,
  },
  {
    $id: "TtsJob",
    description:
      "A text-to-speech job: an inference job of type `tts` (the text spoken by the base synthesizer, then converted with the voice model as a voice conversion is)",
  },
);
export type TtsJobRecord = Omit<Static<typeof TtsJobRecord>, "model"> & { model: VoiceModelRecord };

export const VoiceBlendJobRecord = Type.Object(
  {
    id: Type.Integer(),
    model1Id: Type.Integer(),
    model2Id: Type.Integer(),
    model3Id: Type.Optional(Type.Integer({ description: "Present when a third model was given" })),
    model4Id: Type.Optional(Type.Integer({ description: "Present when a fourth model was given" })),
    alpha: Type.Number(),
    alpha2: Type.Number(),
    alpha3: Type.Optional(Type.Number({ description: "Present with three or four models" })),
    alpha4: Type.Optional(Type.Number({ description: "Present with four models" })),
    status: JobStatus,
    outputModelId: Type.Integer(),
    title: Type.String(),
    createdAt: Timestamp,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    ...jobExtras,
  },
  { $id: "VoiceBlendJob", description: "A voice blender job; its output model is usable once status is `success`" },
);
export type VoiceBlendJobRecord = Static<typeof VoiceBlendJobRecord>;

export const AudioAnalysisJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("analyze"),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    inputFileName: Nullable(Type.String({ description: "The uploaded file's name, as sent (at most 255 characters)" })),
    analysis: Nullable(Type.Ref("AudioAnalysis", { description: "What the analysis found; null until the job succeeded" })),
    analyzer: Nullable(
      Type.String({
        description:
          "What found key and tempo (`essentia.js <Essentia version>`) and loudness (`ffmpeg ebur128`); null until the job succeeded",
      }),
    ),
    ...jobExtras,
  },
  {
    $id: "AudioAnalysisJob",
    description:
      "An audio analysis job: an uploaded file's key and scale, tempo and beats (Essentia), loudness (EBU R128) and duration",
  },
);
export type AudioAnalysisJobRecord = Omit<Static<typeof AudioAnalysisJobRecord>, "analysis"> & {
  analysis: AudioAnalysisResult | null;
};

export const VocalRepairJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("repair"),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    inputFileName: Nullable(Type.String({ description: "The uploaded file's name, as sent (at most 255 characters)" })),
    steps: Type.Array(Type.Union([Type.Literal("dereverb"), Type.Literal("denoise")]), {
      description:
        "The steps run on the vocal, in the order they run (always dereverb before denoise, whatever order the create named them in): `dereverb` subtracts the vocal split's `reverb` stem, `denoise` is RNNoise (48 kHz, 480-sample frames, each channel on its own)",
    }),
    isolateVocal: Type.Boolean({
      description: "True when the input was a mix whose vocal the vocal separation isolated before the steps ran",
    }),
    models: Type.Array(Type.String(), {
      description:
        "The separation models that served the job (the vocal separation's for `isolateVocal`, the vocal split's for `dereverb`); empty until the job succeeded, and for a denoise alone",
    }),
    outputFileUrl: SignedUrl,
    lossyOutputFileUrl: SignedUrl,
    ...jobExtras,
    ...outputRetention,
  },
  {
    $id: "VocalRepairJob",
    description:
      "A vocal repair job: an uploaded vocal (or a mix whose vocal is isolated first) with noise and room reverb removed, as the steps asked",
  },
);
export type VocalRepairJobRecord = Static<typeof VocalRepairJobRecord>;

/** Loudness as the mastering measures it before and after (ffmpeg's ebur128, as an audio analysis reports it). */
const MasteringLoudness = Type.Object(
  {
    integratedLufs: Nullable(
      Type.Number({ description: "Integrated loudness (EBU R128 / ITU-R BS.1770-4), LUFS, to 0.1; null for silence" }),
    ),
    loudnessRangeLu: Type.Number({ description: "Loudness range (EBU Tech 3342), LU, to 0.1" }),
    truePeakDbtp: Nullable(Type.Number({ description: "True peak over the channels, dBTP, to 0.1; null for digital silence" })),
  },
  { description: "Loudness measured by ffmpeg's ebur128 filter" },
);

export const MasteringJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("master"),
    mode: Type.Union([Type.Literal("reference"), Type.Literal("loudness")], {
      description:
        "`reference`: mastered to `referenceFile` (Matchering's algorithm); `loudness`: normalised to `targetLufs` / `truePeakDb` (ffmpeg's two-pass loudnorm)",
    }),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    inputFileName: Nullable(Type.String({ description: "The target file's name, as sent (at most 255 characters)" })),
    inputFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the target as uploaded (to compare before and after); null once the retention sweep deleted the uploads (RETENTION_INPUT_MINUTES)",
      }),
    ),
    referenceFileName: Nullable(
      Type.String({ description: "The reference file's name, as sent (at most 255 characters); null in loudness mode" }),
    ),
    targetLufs: Nullable(Type.Number({ description: "The integrated loudness asked for, LUFS; null in reference mode" })),
    truePeakDb: Nullable(Type.Number({ description: "The true peak ceiling asked for, dBTP; null in reference mode" })),
    outputFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the mastered track, WAV 24-bit (reference mode: 44.1 kHz stereo, as Matchering writes it; loudness mode: the target's rate and channels); null until success",
      }),
    ),
    output16BitFileUrl: Nullable(Type.String({ description: "The same master as WAV 16-bit (signed URL); null until success" })),
    lossyOutputFileUrl: Nullable(
      Type.String({ description: "The same master as mp3, 320 kbps CBR (signed URL); null until success" }),
    ),
    loudnessBefore: Nullable(MasteringLoudness),
    loudnessAfter: Nullable(MasteringLoudness),
    processor: Nullable(
      Type.String({
        description:
          "What mastered it: `matchering` (Mixdown's implementation of Matchering 2's algorithm, its defaults), `ffmpeg loudnorm linear` (one gain) or `ffmpeg loudnorm dynamic` (loudnorm's limiter, when one gain would exceed the true peak); null until success",
      }),
    ),
    ...jobExtras,
    ...outputRetention,
  },
  {
    $id: "MasteringJob",
    description:
      "A mastering job: a target track mastered to a reference track (Matchering) or to a loudness target (EBU R128, ffmpeg's loudnorm), with its loudness before and after",
  },
);
export type MasteringJobRecord = Static<typeof MasteringJobRecord>;

export const HarmonyJobRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("harmony"),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    inputFileName: Nullable(Type.String({ description: "The uploaded file's name, as sent (at most 255 characters)" })),
    inputFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the upload (to compare before and after); null once the retention sweep deleted it (RETENTION_INPUT_MINUTES)",
      }),
    ),
    interval: Type.Union([Type.Literal("third"), Type.Literal("sixth")], {
      description:
        "The harmony's interval on the key's scale: `third` (two scale steps: 3 or 4 semitones, as the degree has it) or `sixth` (five steps: 8 or 9 semitones)",
    }),
    direction: Type.Union([Type.Literal("above"), Type.Literal("below")], {
      description: "Whether the harmony is `above` or `below` the lead",
    }),
    key: Nullable(
      Type.String({
        description:
          "The key the harmony is in, tonic and scale (`A minor`, `F# major`; tonics spelled C C# D Eb E F F# G Ab A Bb B): the one given, or the one the worker found (null until then)",
      }),
    ),
    keySource: Nullable(
      Type.Union([Type.Literal("given"), Type.Literal("found")], {
        description:
          "`given`: the create named the key; `found`: the worker found it in the upload with the audio analysis (Essentia's KeyExtractor); null until it is known",
      }),
    ),
    keyConfidence: Nullable(
      Type.Number({
        description: "KeyExtractor's strength (0-1) for a key the worker found; null for a given key or until found",
      }),
    ),
    isolateVocal: Type.Boolean({
      description:
        "True when the input was a mix whose vocal the vocal separation isolated first (the mix file is then the mix with the harmony)",
    }),
    notes: Nullable(Type.Integer({ minimum: 0, description: "How many sung notes the harmony follows; null until success" })),
    models: Type.Array(Type.String(), {
      description: "The separation models that isolated the vocal (`isolateVocal`); empty otherwise and until the job succeeded",
    }),
    harmonyFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the harmony voice alone, lossless (LOSSLESS_FORMAT), at the input's rate; null until success",
      }),
    ),
    lossyHarmonyFileUrl: Nullable(Type.String({ description: "The harmony alone as mp3 (signed URL); null until success" })),
    mixFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the upload with the harmony under it (4 dB below the lead, scaled down as a whole if the sum would clip), lossless; null until success",
      }),
    ),
    lossyMixFileUrl: Nullable(Type.String({ description: "The mix as mp3 (signed URL); null until success" })),
    ...jobExtras,
    ...outputRetention,
  },
  {
    $id: "HarmonyJob",
    description:
      "A harmony job: a harmony voice a third or a sixth above or below an uploaded vocal (or a mix's isolated vocal), in key, note by note, with formants preserved",
  },
);
export type HarmonyJobRecord = Static<typeof HarmonyJobRecord>;

const BatchJobStatusCounts = Type.Object(
  {
    running: Type.Integer({ minimum: 0 }),
    success: Type.Integer({ minimum: 0 }),
    error: Type.Integer({ minimum: 0 }),
    cancelled: Type.Integer({ minimum: 0 }),
  },
  { description: "How many of the batch's jobs are in each status" },
);

export const BatchRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    kind: Type.Union([Type.Literal("vocal-separation"), Type.Literal("stem-split")], {
      description:
        "The kind of every job of the batch (each one a job of that kind: `GET /vocal-separations/:id` or `/stem-splits/:id`)",
    }),
    status: Type.Union([Type.Literal("running"), Type.Literal("success"), Type.Literal("error"), Type.Literal("cancelled")], {
      description:
        "`running` while any job runs; once all have ended: `success` when every job succeeded, `error` when at least one failed, else `cancelled` (at least one cancelled, none failed)",
    }),
    progress: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: "The mean of the jobs' progress, an ended job counting 100",
    }),
    total: Type.Integer({ minimum: 0, description: "The batch's jobs: one per accepted file" }),
    counts: BatchJobStatusCounts,
    jobEndTime: Nullable(Timestamp),
    jobs: Type.Array(
      Type.Object({
        id: Type.Integer({ description: "The job's id, of the batch's kind" }),
        fileName: Nullable(
          Type.String({
            description:
              "The file's name as sent (for a link, the last part of its path); the zip's folder of its outputs is named after it",
          }),
        ),
        status: JobStatus,
        progress: Type.Integer({ minimum: 0, maximum: 100 }),
        errorMessage: Nullable(Type.String()),
      }),
      { description: "The batch's jobs in the order of its files" },
    ),
    rejected: Type.Array(
      Type.Object({
        fileName: Nullable(Type.String({ description: "The file's name as sent; for a link, the link as sent" })),
        reason: Type.String({ description: "Why the file made no job: the words its own create's 4xx would have had" }),
      }),
      {
        description:
          "The files the create refused (not audio, too long) and the links it refused (not http(s), an address the service does not download from): they have no job",
      },
    ),
    zipUrl: Nullable(
      Type.String({
        description:
          "Once every job has ended (and one succeeded): `GET` it with the same bearer key for one zip of every output, a folder per input file; null before",
      }),
    ),
  },
  {
    $id: "Batch",
    description: "A batch (Mixdown): one create that made an ordinary job per file, its jobs' state summed up",
  },
);
export type BatchRecord = Static<typeof BatchRecord>;
export const PipelineStepRecord = Type.Object(
  {
    index: Type.Integer({ minimum: 0, description: "The step's place in the chain, from 0" }),
    step: Type.String({
      description: "separate, repair, convert, recombine or master (`GET /pipeline-presets` lists the presets' chains)",
    }),
    options: Type.Record(Type.String(), Type.Unknown(), { description: "The step's options, as validated at create" }),
    status: Type.Union([Type.Literal("pending"), JobStatus], {
      description: "`pending` until the step's job exists, then its job's status",
    }),
    progress: Type.Integer({ minimum: 0, maximum: 100, description: "The step's job's progress (0 while pending)" }),
    errorMessage: Nullable(Type.String({ description: "Why the step's job failed" })),
    jobKind: Type.String({
      description:
        "The path of the kind the step runs as (`vocal-separations`, `vocal-repairs`, `voice-conversions`, `masterings`): its job is `GET /<jobKind>/<jobId>`, whose record has the step's outputs' signed URLs",
    }),
    jobId: Nullable(
      Type.Integer({
        description:
          "The id of the ordinary job the step ran as (a recombine's is its convert's: that conversion mixes onto the backing); null until it started",
      }),
    ),
  },
  { $id: "PipelineStep" },
);
export type PipelineStepRecord = Static<typeof PipelineStepRecord>;

export const PipelineRecord = Type.Object(
  {
    id: Type.Integer(),
    createdAt: Timestamp,
    type: Type.Literal("pipeline"),
    status: JobStatus,
    jobStartTime: Timestamp,
    jobEndTime: Nullable(Timestamp),
    preset: Nullable(Type.String({ description: "The preset the steps came from; null for the caller's own steps" })),
    input: Type.Union([Type.Literal("mix"), Type.Literal("vocal")], {
      description: "What the input is: a song or a vocal alone",
    }),
    inputFileName: Nullable(Type.String({ description: "The uploaded file's name, as sent (at most 255 characters)" })),
    inputFileUrl: Nullable(
      Type.String({
        description:
          "Signed download URL of the input as uploaded (to compare before and after with the last step's output); null once the retention sweep deleted the uploads (RETENTION_INPUT_MINUTES)",
      }),
    ),
    steps: Type.Array(Type.Ref("PipelineStep"), { description: "The chain, in order" }),
    progress: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: "Percent done of the whole chain: each step counts for an equal share",
    }),
    errorMessage: Nullable(
      Type.String({ description: "Why the pipeline failed, naming the step (`step 1 (convert) failed: ...`)" }),
    ),
  },
  {
    $id: "Pipeline",
    description:
      "A pipeline: steps chained on one input (separate, repair, convert, recombine, master), each run as an ordinary job whose record holds its outputs",
  },
);
export type PipelineRecord = Omit<Static<typeof PipelineRecord>, "steps"> & { steps: PipelineStepRecord[] };

export const listOf = (ref: string) => Type.Object({ data: Type.Array(Type.Ref(ref)), meta: PaginationMeta });

/** Schemas registered once with `app.addSchema` and referenced by id. */
export const sharedRecordSchemas = [
  VoiceModelRecord,
  AudioAnalysisResult,
  SeparationAnalysis,
  SeparationJobRecord,
  VoiceConversionJobRecord,
  VoiceBlendJobRecord,
  TtsJobRecord,
  AudioAnalysisJobRecord,
  VocalRepairJobRecord,
  MasteringJobRecord,
  HarmonyJobRecord,
  BatchRecord,
  PipelineStepRecord,
  PipelineRecord,
];
