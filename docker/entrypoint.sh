#!/bin/sh
# One image, several roles: `api` (default), `worker`, `migrate`, or any command (`pnpm mixdown keys create --name me`).
# MIXDOWN_ROLE picks the role when no command is given.
set -e
role="${1:-${MIXDOWN_ROLE:-api}}"
case "$role" in
  api) exec node --import tsx apps/api/src/main.ts ;;
  worker) exec node --import tsx apps/worker/src/main.ts ;;
  migrate) exec node --import tsx apps/cli/src/main.ts migrate ;;
  *) exec "$@" ;;
esac
