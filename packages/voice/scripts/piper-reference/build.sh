#!/usr/bin/env bash
# Builds the reference phonemizer (harness.cpp) from upstream's own sources, fetched by the caller:
#   build.sh PIPER_PHONEMIZE_DIR ESPEAK_NG_DIR OUT_DIR
# PIPER_PHONEMIZE_DIR: a checkout of github.com/rhasspy/piper-phonemize (bfc2e75 was used);
# ESPEAK_NG_DIR: github.com/rhasspy/espeak-ng at the commit piper-phonemize's CMakeLists pins
# (0f65aa301e0d6bae5e172cc74197d32a6182200f). espeak-ng is configured with the options that
# CMakeLists passes, except EXTRA_ru (its ru_listx is a large file the fetched snapshot lacks; the
# comparison leaves Russian out). Needs cmake, g++ and libsonic-dev (found, not linked: without it
# espeak-ng's cmake clones sonic from GitHub). Writes OUT_DIR/bin/harness and OUT_DIR/share/espeak-ng-data.
set -euo pipefail
pp="$(realpath "$1")"
espeak="$(realpath "$2")"
out="$(realpath -m "$3")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out/build" "$out/shim"
cmake -S "$espeak" -B "$out/build/espeak-ng" -DCMAKE_INSTALL_PREFIX="$out" \
  -DUSE_ASYNC=OFF -DBUILD_SHARED_LIBS=ON -DUSE_MBROLA=OFF -DUSE_LIBSONIC=OFF -DUSE_LIBPCAUDIO=OFF \
  -DUSE_KLATT=OFF -DUSE_SPEECHPLAYER=OFF -DEXTRA_cmn=ON -DEXTRA_ru=OFF \
  -DCMAKE_C_FLAGS="-D_FILE_OFFSET_BITS=64" >"$out/build/espeak-ng.log"
cmake --build "$out/build/espeak-ng" -j"$(nproc)" >>"$out/build/espeak-ng.log"
cmake --install "$out/build/espeak-ng" >>"$out/build/espeak-ng.log"
# phonemize.cpp includes onnxruntime's C++ header for libtashkeel (Arabic) without using it here.
: >"$out/shim/onnxruntime_cxx_api.h"
mkdir -p "$out/bin"
g++ -std=c++17 -O2 -I"$out/include" -I"$pp/src" -I"$out/shim" \
  "$here/harness.cpp" "$pp/src/phonemize.cpp" "$pp/src/phoneme_ids.cpp" \
  -L"$out/lib" -Wl,-rpath,"$out/lib" -lespeak-ng -o "$out/bin/harness"
echo "$out/bin/harness"
