#!/bin/sh
# One image, several roles: `api` (default), `worker`, `migrate`, or any command (`pnpm mixdown keys create --name me`).
# MIXDOWN_ROLE picks the role when no command is given.
set -e
role="${1:-${MIXDOWN_ROLE:-api}}"

# MIXDOWN_MODELS: the catalogue models this container needs are pulled at start when missing
# (verified, resumed after a cut), and the defaults they make (SEPARATION_MODEL_* left unset) are
# exported to the API or the worker. Containers that share one volume at MODELS_DIR take turns (flock).
pull_models() {
  [ -n "${MIXDOWN_MODELS:-}" ] || return 0
  models_dir="${MODELS_DIR:-/app/models}"
  defaults="$(flock "$models_dir/.pull.lock" node --import tsx apps/cli/src/main.ts models pull --from-env --print-defaults)"
  eval "$defaults"
}

case "$role" in
  api) pull_models; exec node --import tsx apps/api/src/main.ts ;;
  worker) pull_models; exec node --import tsx apps/worker/src/main.ts ;;
  migrate) exec node --import tsx apps/cli/src/main.ts migrate ;;
  *) exec "$@" ;;
esac
