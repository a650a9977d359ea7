#!/bin/sh
# One image, several roles: `api` (default), `worker`, `migrate`, or any command (`pnpm mixdown keys create --name me`).
# MIXDOWN_ROLE picks the role when no command is given.
set -e
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
    defaults="$(node --import tsx apps/cli/src/main.ts models pull --from-env --print-defaults)"
    eval "$defaults"
  fi
  flock -u 9
  exec 9>&-
}

# The worker starts on jemalloc unless MODEL_ALLOCATOR=system (then on glibc with two malloc arenas),
# with a small V8 young generation (packages/separation/src/allocator.ts says why and what each costs).
use_model_env() {
  lines="$(node packages/separation/scripts/model-env.ts)" || exit 2
  eval "$lines"
}

case "$role" in
  api) prepare_models; exec node --import tsx apps/api/src/main.ts ;;
  worker) prepare_models; use_model_env; exec node --import tsx apps/worker/src/main.ts ;;
  migrate) exec node --import tsx apps/cli/src/main.ts migrate ;;
  *) exec "$@" ;;
esac
