#!/usr/bin/env bash
# Builds llama-server (CPU only) from the llama.cpp release that the npm
# package node-llama-cpp ships as a git bundle, into a cache that later runs
# reuse: $LLAMA_BUILD_DIR, else $HOME/.cache/desktop-assistant/llama-server-<package>.
# The cache also keeps the vocabulary and the chat templates the real-server
# tests need. On any failure the last line names the step.
set -uo pipefail

PACKAGE=node-llama-cpp@3.21.1
# tests/real/build.ts derives the same directory: change both together.
dest=${LLAMA_BUILD_DIR:-$HOME/.cache/desktop-assistant/llama-server-${PACKAGE/@/-}}
jobs=${LLAMA_BUILD_JOBS:-2}

fail() {
  echo "llama-server build failed at step \"$1\"${2:+: $2}"
  exit 1
}

if [ -f "$dest/complete" ] && timeout 60 "$dest/bin/llama-server" --version >/dev/null 2>&1; then
  echo "llama-server: cached build of $PACKAGE in $dest"
  exit 0
fi

for tool in npm tar git cmake c++; do
  command -v "$tool" >/dev/null 2>&1 || fail "find tools" "$tool is not installed"
done

work=$(mktemp -d) || fail "make a work directory"
# The sources and the objects are large and of no use once installed.
trap 'rm -rf "$work"' EXIT
log="$work/build.log"
started=$SECONDS

# Everything a step prints goes to the log; its tail is shown when it fails.
run() {
  local step=$1
  shift
  if ! "$@" >>"$log" 2>&1; then
    tail -n 30 "$log"
    fail "$step" "$*"
  fi
}

echo "llama-server: building from $PACKAGE (about 7 minutes on 2 cores)"
cd "$work" || fail "make a work directory"
run "download $PACKAGE" npm pack --silent "$PACKAGE"
tarball=$(ls -- *.tgz 2>/dev/null | head -1)
[ -n "$tarball" ] || fail "download $PACKAGE" "npm pack left no tarball"
run "unpack the bundle" tar xzf "$tarball" package/llama/gitRelease.bundle
run "clone the bundle" git -c advice.detachedHead=false clone -q \
  package/llama/gitRelease.bundle src
cd src || fail "clone the bundle" "no src directory"
# GGML_NATIVE=OFF: the cached binary must run on whichever CPU the cache
# lands on; static libraries: one self-contained file to copy.
run "configure (cmake)" cmake -B build -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF
run "build (cmake --build)" cmake --build build --target llama-server -j"$jobs"

staging="$dest.partial"
rm -rf "$staging"
run "install" mkdir -p "$staging/bin" "$staging/models" "$staging/templates"
run "install" cp build/bin/llama-server "$staging/bin/"
run "install" cp models/ggml-vocab-gpt-2.gguf "$staging/models/"
run "install" cp models/templates/Qwen3.5-4B.jinja "$staging/templates/"
timeout 60 "$staging/bin/llama-server" --version >"$staging/version.txt" 2>&1 ||
  fail "run the built binary" "$(tail -n 3 "$staging/version.txt")"
echo "$PACKAGE" >"$staging/complete"
rm -rf "$dest"
mv "$staging" "$dest" || fail "install" "cannot move the build to $dest"
echo "llama-server: built $PACKAGE in $((SECONDS - started)) s into $dest"
