#!/bin/sh
# One image, several roles: `api` (default), `worker`, `migrate`, or any command (`mixdown keys create --name me`).
# MIXDOWN_ROLE picks the role when no command is given. Every role runs the compiled JavaScript (apps/*/dist,
# packages/*/dist: docker/Dockerfile's `pnpm build`), each workspace package resolved to its dist/ by the
# mixdown-dist condition; stack traces name the TypeScript lines through the source maps.
set -e
node_run() { exec node --conditions=mixdown-dist --enable-source-maps "$@"; }
role="${1:-${MIXDOWN_ROLE:-api}}"

# Before the API or a worker starts, with MODELS_DIR locked (containers that share one volume there
# take turns, flock):
# - the default models the image ships (MIXDOWN_SHIPPED_MODELS, listed with their sha256 in
#   .shipped.sha256) are copied into MODELS_DIR when its copy of that list differs, so an empty
#   volume gets them and a newer image's defaults reach an old volume; other files there (models
#   pulled or imported) are left alone;
# - MIXDOWN_MODELS: the catalogue models this container needs are pulled when missing (verified,
#   resumed after a cut), and the defaults they make (SEPARATION_MODEL_* left unset) are exported.
prepare_models() {
  models_dir="${MODELS_DIR:-/app/models}"
  mkdir -p "$models_dir"
  exec 9>"$models_dir/.pull.lock"
  flock 9
  shipped="${MIXDOWN_SHIPPED_MODELS:-}"
  if [ -n "$shipped" ] && [ -f "$shipped/.shipped.sha256" ] && [ "$(realpath "$shipped")" != "$(realpath "$models_dir")" ] &&
    ! cmp -s "$shipped/.shipped.sha256" "$models_dir/.shipped.sha256"; then
    sed 's/^[0-9a-f]*  //' "$shipped/.shipped.sha256" | while read -r file; do
      mkdir -p "$(dirname "$models_dir/$file")"
      cp "$shipped/$file" "$models_dir/$file.seeding" && mv -f "$models_dir/$file.seeding" "$models_dir/$file"
    done
    cp "$shipped/.shipped.sha256" "$models_dir/.shipped.sha256"
    echo "entrypoint: the image's default models copied into $models_dir"
  fi
  if [ -n "${MIXDOWN_MODELS:-}" ]; then
    defaults="$(mixdown models pull --from-env --print-defaults)"
    eval "$defaults"
  fi
  flock -u 9
  exec 9>&-
}

# The worker starts on jemalloc unless MODEL_ALLOCATOR=system (then on glibc with two malloc arenas),
# with a small V8 young generation (packages/separation/src/allocator.ts says why and what each costs).
use_model_env() {
  lines="$(node --conditions=mixdown-dist packages/separation/dist/model-env-cli.js)" || exit 2
  eval "$lines"
}

case "$role" in
  api) prepare_models; node_run apps/api/dist/main.js ;;
  worker) prepare_models; use_model_env; node_run apps/worker/dist/main.js ;;
  migrate) node_run apps/cli/dist/main.js migrate ;;
  # `pnpm mixdown <command>`, as the docs said before the image dropped pnpm, still works.
  pnpm) if [ "${2:-}" = mixdown ]; then shift 2; exec mixdown "$@"; fi; exec "$@" ;;
  *) exec "$@" ;;
esac
