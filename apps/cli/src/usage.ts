// The commands' usage texts, apart from the commands themselves: `help` and every error that
// shows a usage load only this, not the packages a command needs (the database client,
// onnxruntime, the model importers), so the CLI answers those at once.

export const keysUsage = `./mixdown.sh keys create --name NAME [--caller ID]   create a key (printed once, on the last line)
    [--reads-per-minute N] [--writes-per-minute N]     its own rate limits (0 = unlimited; default: RATE_LIMIT_*_PER_MINUTE)
    [--quota-minutes N]                                its monthly quota of audio, in minutes (default: none)
    [--operator]                                       an operator key: may also install catalogue models
                                                       (POST /model-installs, the dashboard's Models page)
                                                       and read every key's usage (GET /usage?all=true)
./mixdown.sh keys limits <id|prefix> [--reads-per-minute N|default] [--writes-per-minute N|default]
                                                     change a key's rate limits
./mixdown.sh keys quota <id|prefix> <N|none>         set or remove a key's monthly quota (minutes of audio)
./mixdown.sh keys usage [--month YYYY-MM]            every key's usage per job kind in a month (default: this one)
./mixdown.sh keys revoke <id|prefix>                 revoke a key
./mixdown.sh keys webhook-secret <id|prefix>         print the secret that signs the key's webhooks
./mixdown.sh keys list                               list keys (never the keys themselves)`;

export const callersUsage = `./mixdown.sh callers purge <caller id|name> [--yes]
                                 deletes everything of one caller, for a person's request to be
                                 forgotten: every job (running ones cancelled first) and voice model
                                 with their stored files, API keys, dashboard sign-in codes,
                                 idempotency keys, webhook deliveries and queue entries; asks first
                                 unless --yes, then prints what it removed`;

export const modelsUsage = `./mixdown.sh models list [--models-dir DIR]   the installed separation models: family, stems,
                                size, and speed (the last \`pnpm bench:separation\` figure for the
                                model on this machine, else "-": listing measures nothing)
./mixdown.sh models import FILE [--config YAML] [--name NAME] [--force] [--models-dir DIR]
                                installs a model you own: an HTDemucs .th, a demucs bag .yaml (with
                                its .th files next to it), an MSST BS-/Mel-Band RoFormer or MDX23C
                                .ckpt with its --config yaml, or an MDX-Net .onnx (geometry from
                                UVR's model_data.json next to it or --model-data FILE, or given
                                with --n-fft --dim-f --dim-t [--compensate] [--primary-stem]).
                                PyTorch checkpoints are converted to ONNX once (Debian's PyTorch is
                                installed for that on first use); the result is run on a few
                                seconds of audio before it is installed
./mixdown.sh models quantize NAME [--as NAME] [--models-dir DIR]
                                installs NAME-int8 (or --as) beside an installed model: its linear
                                layers' weights in int8, quantised per run as onnxruntime's
                                quantize_dynamic does (less memory, a faster transformer; the
                                output differs from the float model's: see docs/separation.md)
./mixdown.sh models available [--models-dir DIR]
                                the model catalogue (models/catalogue.json): every published model
                                Mixdown can pull by name, installed or not, with its size, stems,
                                reported quality and what it serves
./mixdown.sh models pull NAME... [--force] [--models-dir DIR]
                                downloads catalogue models (resumed after a cut, checked against
                                their published size and SHA-256), converts and installs them;
                                \`hubert\` and \`rmvpe\` are RVC's ContentVec and pitch models.
                                MIXDOWN_MODEL_MIRROR=<base URL> fetches from a mirror (path kept)
./mixdown.sh models pull --from-env [--print-defaults]
                                pulls what MIXDOWN_MODELS names (as \`up\` and the docker image do at
                                start); --print-defaults prints the defaults it makes as shell exports
./mixdown.sh models pull URL [--sha256 HEX] [--config URL|FILE] [--name NAME] [--force]
                                the same for any checkpoint (MDX-Net geometry flags as for import)`;

export const voicesUsage = `./mixdown.sh voices import <file.onnx|file.pth|URL> --title TITLE [--public | --owner CALLER_ID]
                         [--tags a,b] [--sample-rate 40000] [--index file.index|URL] [--instrument]
                                 import an RVC .pth, an RVC or native ONNX voice model (an RVC model with
                                 its feature index: the faiss .index its training wrote); a URL is
                                 downloaded first: a .pth, an .onnx, or a .zip of a .pth and its .index
                                 (Hugging Face /blob/ links work); --instrument marks a model that
                                 turns a performance into an instrument's sound (listed by
                                 GET /voice-models?instruments=true)
./mixdown.sh voices list         voice models: state, architecture, owner, and what each still needs
                                 installed (RVC: ContentVec, RMVPE) with the command that installs it
./mixdown.sh voices import-features <hubert_base.pt|vec-*.onnx> [--models-dir DIR]
                                 installs the ContentVec features RVC models take (MODELS_DIR/
                                 VOICE_CONTENTVEC_MODEL, 768-d for v2, and VOICE_CONTENTVEC_V1_MODEL,
                                 256-d for v1); a checkpoint is converted once to both
./mixdown.sh voices import-pitch <rmvpe.pt|rmvpe.onnx> [--models-dir DIR]
                                 installs the RMVPE pitch model RVC conversions use (at
                                 MODELS_DIR/VOICE_RMVPE_MODEL); a rmvpe.pt is converted to ONNX once
                                 (Debian's PyTorch is installed for that on first use)
./mixdown.sh voices pull hubert|rmvpe [--force] [--models-dir DIR]
                                 downloads RVC's hubert_base.pt / rmvpe.pt (checked against the
                                 SHA-256 RVC pins) and installs them as the two commands above do;
                                 the same as ./mixdown.sh models pull hubert rmvpe`;

export const backupUsage = `./mixdown.sh backup FILE         back up the database, every stored file and the signing secret into
                                FILE (a tar archive; gzip-compressed when FILE ends in .gz or .tgz; - is
                                stdout); jobs may keep running meanwhile
./mixdown.sh restore FILE [--force]
                                restore such a backup (- is stdin) into this install, which must be empty
                                unless --force (then everything in it is replaced); stop the service first`;

export const batchUsage = `./mixdown.sh batch <file|dir>... --server URL --key KEY
                                send many files to a running Mixdown as batches, follow them and
                                download their zips (see: ./mixdown.sh batch --help)`;
