#!/usr/bin/env bash
# Mixdown's two commands on a fresh Debian/Ubuntu machine:
#   ./mixdown.sh up     run the whole service locally (no Docker), print its URL and an API key
#   ./mixdown.sh test   run every test
# Both first install what is missing: apt packages (redis-server, ffmpeg, ...), Node 24, pnpm 12,
# the workspace's npm dependencies and the generated Prisma client. Nothing is reinstalled when
# present. `./mixdown.sh setup` only installs. Extra arguments go to the command
# (e.g. `./mixdown.sh up --no-worker`, `./mixdown.sh test --filter @mixdown/db`).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

APT_PACKAGES=(ca-certificates redis-server ffmpeg espeak-ng sox fluidsynth fluid-soundfont-gm)
NODE_MAJOR=24
PNPM_MAJOR=12

if [ -t 1 ]; then say() { printf '\033[1m==> %s\033[0m\n' "$*"; }; else say() { printf '==> %s\n' "$*"; }; fi
die() { printf 'mixdown.sh: %s\n' "$*" >&2; exit 1; }

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: install ${APT_PACKAGES[*]} and Node $NODE_MAJOR yourself, then rerun"
  SUDO=(sudo)
fi

apt_updated=0
apt_install() {
  command -v apt-get >/dev/null || die "no apt-get: install these yourself, then rerun: $*"
  if [ "$apt_updated" -eq 0 ]; then
    say "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  say "apt-get install $*"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

install_system_packages() {
  local missing=()
  if command -v dpkg-query >/dev/null; then
    for pkg in "${APT_PACKAGES[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
  else
    command -v redis-server >/dev/null || missing+=(redis-server)
    command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  fi
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
}

node_major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true; }

install_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
  fi
  local major
  major="$(node_major)"
  if [ -z "$major" ] || [ "$major" -lt "$NODE_MAJOR" ]; then
    say "Node $(node --version 2>/dev/null || echo none) is older than $NODE_MAJOR: npm i -g node@$NODE_MAJOR"
    "${SUDO[@]}" npm install -g --force --no-fund --no-audit "node@$NODE_MAJOR"
    hash -r
    major="$(node_major)"
    [ -n "$major" ] && [ "$major" -ge "$NODE_MAJOR" ] ||
      die "node on PATH is still $(node --version); put $(npm prefix -g)/bin before it in PATH"
  fi
}

install_pnpm() {
  local version
  version="$(pnpm --version 2>/dev/null | tail -n1 || true)"
  if [ "${version%%.*}" != "$PNPM_MAJOR" ]; then
    say "pnpm ${version:-none} is not $PNPM_MAJOR: npm i -g pnpm@$PNPM_MAJOR"
    "${SUDO[@]}" npm install -g --no-fund --no-audit "pnpm@$PNPM_MAJOR"
    hash -r
  fi
}

install_dependencies() {
  # onnxruntime-node's install script downloads CUDA libraries; the CPU backend ships in the package.
  export ONNXRUNTIME_NODE_INSTALL=skip
  local attempt
  for attempt in 1 2 3; do
    say "pnpm install --frozen-lockfile (attempt $attempt)"
    # pnpm 12 sometimes fails resolving a config dependency with a registry 404; a retry passes.
    if pnpm install --frozen-lockfile; then break; fi
    [ "$attempt" -lt 3 ] || die "pnpm install failed 3 times"
    sleep $((attempt * 5))
  done
  say "pnpm db:generate"
  pnpm db:generate
}

setup() {
  install_system_packages
  install_node
  install_pnpm
  install_dependencies
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
  up)
    setup
    say "pnpm mixdown up $*"
    exec pnpm mixdown up "$@"
    ;;
  test)
    setup
    say "pnpm test $*"
    exec pnpm test "$@"
    ;;
  setup) setup ;;
  -h | --help | help) usage 0 ;;
  *) usage 2 ;;
esac
