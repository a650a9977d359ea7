#!/usr/bin/env bash
# Mixdown on a Debian/Ubuntu machine, from a clone of the repository:
#   ./mixdown.sh up           run the whole service locally (no Docker); prints its dashboard link, URL, then an API key
#   ./mixdown.sh test         run every test (`./mixdown.sh test --filter @mixdown/db`: one package)
#   ./mixdown.sh setup        only install what is missing
#   ./mixdown.sh <command>    any Mixdown CLI command: keys, voices, separate, migrate, ...
#   ./mixdown.sh <script>     a workspace script: bench:separation, eval:voice, typecheck, ...
#   ./mixdown.sh pnpm ...     pnpm itself, with the project's toolchain
#   ./mixdown.sh help         this text and the CLI's commands
# The first run installs what is missing, and nothing that is already there: apt packages
# (redis-server, ffmpeg, ...), and the project's own toolchain (Node 24 and pnpm 12 under
# .mixdown/toolchain; the machine's own node is left as it is), the workspace's npm dependencies
# and the generated Prisma client.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT="$PWD"

APT_PACKAGES=(ca-certificates redis-server ffmpeg libjemalloc2 espeak-ng festival festvox-us-slt-hts sox fluidsynth fluid-soundfont-gm)
# Only `./mixdown.sh test` installs these: chromium for the dashboard's browser test, and Debian's
# PyTorch, which `models import` / `voices import` install on first use, for the tests of those imports.
TEST_APT_PACKAGES=(chromium curl python3-requests python3-botocore python3-torch python3-onnx python3-numpy python3-yaml libopenblas0-pthread)
NODE_VERSION=24.21.0
PNPM_VERSION="$(sed -nE 's/.*"packageManager": *"pnpm@([0-9.]+)".*/\1/p' package.json)"
TOOLCHAIN="$ROOT/.mixdown/toolchain"

if [ -t 1 ]; then say() { printf '\033[1m==> %s\033[0m\n' "$*"; }; else say() { printf '==> %s\n' "$*"; }; fi
die() {
  printf 'mixdown.sh: %s\n' "$1" >&2
  shift
  for line in "$@"; do printf '  %s\n' "$line" >&2; done
  exit 1
}

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
}

SUDO=()
need_root() {
  if [ "$(id -u)" -ne 0 ] && [ "${#SUDO[@]}" -eq 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: install these yourself, then rerun: $*"
    SUDO=(sudo)
  fi
}

apt_updated=0
apt_install() {
  command -v apt-get >/dev/null || die "no apt-get here: install these yourself, then rerun: $*"
  need_root "$@"
  if [ "$apt_updated" -eq 0 ]; then
    say "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
      die "apt-get update failed (see above)." "Fix the machine's apt sources or network, then rerun."
    apt_updated=1
  fi
  say "apt-get install $*"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" ||
    die "apt-get install $* failed (see above)." "Install them yourself (apt-get install $*), then rerun."
}

install_test_packages() {
  local missing=() pkg
  command -v dpkg-query >/dev/null || return 0
  for pkg in "${TEST_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
}

install_system_packages() {
  local missing=() pkg
  if command -v dpkg-query >/dev/null; then
    for pkg in "${APT_PACKAGES[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
  else
    command -v redis-server >/dev/null || missing+=(redis-server)
    command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  fi
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
  local tool
  for tool in redis-server ffmpeg ffprobe; do
    command -v "$tool" >/dev/null || die "$tool is still not on PATH after installing ${APT_PACKAGES[*]}."
  done
}

node_platform() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo linux-x64 ;;
    Linux-aarch64 | Linux-arm64) echo linux-arm64 ;;
    *) die "no Node $NODE_VERSION build for $(uname -s) $(uname -m): install Node $NODE_VERSION and pnpm $PNPM_VERSION yourself" ;;
  esac
}

# The toolchain's programs come first on PATH for everything this script runs (pnpm, the CLI, the
# tests and the services they start); nothing outside .mixdown/toolchain is changed.
use_toolchain() {
  export PATH="$TOOLCHAIN/bin:$PATH"
  # Native addons compile against the headers of the node that runs them, not the machine's.
  export npm_config_nodedir="$TOOLCHAIN/node"
  hash -r
}

toolchain_node_ok() { [ "$("$TOOLCHAIN/bin/node" --version 2>/dev/null || true)" = "v$NODE_VERSION" ]; }
toolchain_pnpm_ok() { [ "$("$TOOLCHAIN/bin/pnpm" --version 2>/dev/null | tail -n1 || true)" = "$PNPM_VERSION" ]; }

# npm only fetches the two packages below from the registry (npm pack / npm install --prefix);
# any npm >= 7 does, whatever node runs it.
ensure_npm() {
  if ! command -v npm >/dev/null; then
    apt_install nodejs npm
    hash -r
    command -v npm >/dev/null || die "npm is still missing after apt-get install nodejs npm." "Install npm, then rerun."
  fi
}

install_node() {
  toolchain_node_ok && return 0
  local platform tmp
  platform="$(node_platform)"
  ensure_npm
  say "Node $NODE_VERSION into .mixdown/toolchain/node (npm package node-$platform; the machine's node is not changed)"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/mixdown-node.XXXXXX")"
  (cd "$tmp" && npm pack --loglevel=error --no-fund --no-audit "node-$platform@$NODE_VERSION" >/dev/null) ||
    { rm -rf "$tmp"; die "npm pack node-$platform@$NODE_VERSION failed (see above)." "Check that npm reaches its registry (npm ping), then rerun."; }
  tar -xzf "$tmp"/node-"$platform"-*.tgz -C "$tmp"
  rm -rf "$TOOLCHAIN/node"
  mkdir -p "$TOOLCHAIN/bin"
  mv "$tmp/package" "$TOOLCHAIN/node"
  rm -rf "$tmp"
  ln -sfn ../node/bin/node "$TOOLCHAIN/bin/node"
  toolchain_node_ok ||
    die "the Node installed in .mixdown/toolchain does not run as v$NODE_VERSION: $("$TOOLCHAIN/bin/node" --version 2>&1 || true)" \
      "Install Node $NODE_VERSION yourself and link it as .mixdown/toolchain/bin/node, then rerun."
}

install_pnpm() {
  toolchain_pnpm_ok && return 0
  ensure_npm
  say "pnpm $PNPM_VERSION into .mixdown/toolchain/pnpm"
  rm -rf "$TOOLCHAIN/pnpm"
  # Run by the toolchain's node (first on PATH); its install script links pnpm's native binary.
  npm install --prefix "$TOOLCHAIN/pnpm" --no-save --no-package-lock --no-fund --no-audit --loglevel=error \
    "pnpm@$PNPM_VERSION" ||
    die "npm install pnpm@$PNPM_VERSION failed (see above)." "Check that npm reaches its registry (npm ping), then rerun."
  ln -sfn ../pnpm/node_modules/.bin/pnpm "$TOOLCHAIN/bin/pnpm"
  toolchain_pnpm_ok ||
    die "pnpm in .mixdown/toolchain does not run as $PNPM_VERSION: $("$TOOLCHAIN/bin/pnpm" --version 2>&1 | tail -n1 || true)" \
      "Its native binary comes from the optional package @pnpm/exe.$(node_platform); check that npm may install optional dependencies."
}

install_dependencies() {
  # onnxruntime-node's install script downloads CUDA libraries; the CPU backend ships in the package.
  export ONNXRUNTIME_NODE_INSTALL=skip
  local stamp="$TOOLCHAIN/installed.sha256" want
  want="$( (cat pnpm-lock.yaml package.json pnpm-workspace.yaml; echo "$NODE_VERSION $PNPM_VERSION") | sha256sum | cut -d' ' -f1)"
  if [ -d node_modules ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d packages/db/src/generated ]; then
    return 0
  fi
  say "pnpm install --frozen-lockfile"
  pnpm install --frozen-lockfile ||
    die "pnpm install failed (see above)." "A network error: rerun. A lockfile error: the checkout is not a clean one."
  [ -d packages/db/src/generated ] || { say "pnpm db:generate"; pnpm db:generate; }
  echo "$want" >"$stamp"
}

# The dashboard the API serves at `/` (apps/web/dist), built again only when what goes into it changed.
build_dashboard() {
  local stamp="$ROOT/.mixdown/web-build.sha256" want
  want="$(
    find apps/web packages/kits-client packages/voice/src/effects-schema.ts pnpm-lock.yaml -type f \
      -not -path '*/node_modules/*' -not -path '*/dist/*' -not -path '*/test/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
  )"
  if [ -f apps/web/dist/index.html ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  say "pnpm --filter @mixdown/web build (the dashboard)"
  pnpm --silent --filter @mixdown/web build >/dev/null ||
    die "building the dashboard failed (see above)." "The API runs without it: pnpm mixdown up, then fix apps/web."
  echo "$want" >"$stamp"
}

# The commands that run models in their own process (`separate`, the model benches) start on
# jemalloc unless MODEL_ALLOCATOR=system (then on glibc with two malloc arenas), with a small V8
# young generation (packages/separation/src/allocator.ts says why and what each costs). `up` and the
# tests' workers set it themselves.
use_model_env() {
  local lines
  lines="$(node packages/separation/src/model-env-cli.ts)" || die "MODEL_ALLOCATOR: see above."
  eval "$lines"
}

setup() {
  install_system_packages
  use_toolchain
  install_node
  install_pnpm
  install_dependencies
}

command="${1:-help}"
[ $# -gt 0 ] && shift
case "$command" in
  up)
    setup
    build_dashboard
    exec pnpm --silent mixdown up "$@"
    ;;
  test)
    setup
    # A filtered run (`test --filter @mixdown/config`) installs them only when it names a package that needs them.
    if [ $# -eq 0 ] || [[ "$*" =~ web|separation|voice|worker|cli|api|storage ]]; then install_test_packages; fi
    say "pnpm test $*"
    exec pnpm test "$@"
    ;;
  setup) setup ;;
  pnpm)
    setup
    exec pnpm "$@"
    ;;
  typecheck | format | build | *:*)
    # The workspace's own scripts: bench:*, eval:*, voices:build, db:generate, typecheck, format, build.
    setup
    [[ "$command" =~ ^(bench:separation|bench:voice|eval:.*)$ ]] && use_model_env
    # `./mixdown.sh bench:x -- --flag`, as pnpm and npm are called: pnpm hands the `--` on, and
    # the scripts' argument parsers would take every flag after it for a positional argument.
    [ "${1:-}" = -- ] && shift
    exec pnpm run "$command" "$@"
    ;;
  -h | --help | help)
    usage
    if [ -x "$TOOLCHAIN/bin/pnpm" ] && [ -d node_modules ]; then
      use_toolchain
      printf '\n'
      pnpm --silent mixdown help
    else
      printf '\nThe CLI commands are listed here once the first run has installed the toolchain.\n'
    fi
    ;;
  *)
    setup
    if [ "$command" = separate ] || [ "$command" = repair ] || [ "$command" = harmony ]; then
      use_model_env
      # the one process that runs the models, with no pnpm (~40 MB) waiting above it
      exec node --import tsx apps/cli/src/main.ts "$command" "$@"
    fi
    exec pnpm --silent mixdown "$command" "$@"
    ;;
esac
