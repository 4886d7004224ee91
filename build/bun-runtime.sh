#!/usr/bin/env bash
# The Bun runtime a build embeds for one target, as a file: prints the path of its `bun` executable.
# `bun build --compile` copies that executable and appends the bundle (--compile-executable-path), so
# the runtime is chosen here, never left to whichever package npm picked for the build host:
#   bun-linux-x64-baseline   amd64: Bun's runtime for every x86-64-v2 CPU (build/check-x86-64-v2.sh
#                            fails the build if an executable needs more)
#   bun-linux-aarch64        arm64
#   bun-linux-x64            Bun's default x64 runtime: only `make bench`, to state what the
#                            baseline costs per call
# The version is the one of the `bun` package in package-lock.json, so the runtime and the bundler
# that writes bytecode for it are the same release. The package comes from the npm registry with
# `npm pack` (which checks its integrity against the registry's) into node_modules/.cache/bun-runtime.
#
# Usage: build/bun-runtime.sh TARGET
set -euo pipefail
TARGET=${1:?usage: build/bun-runtime.sh bun-linux-x64-baseline|bun-linux-aarch64|bun-linux-x64}
case $TARGET in
  bun-linux-x64-baseline | bun-linux-aarch64 | bun-linux-x64) ;;
  *) echo "bun-runtime.sh: no runtime for target '$TARGET' (bun-linux-x64-baseline, bun-linux-aarch64, bun-linux-x64)" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ROOT/node_modules/bun/package.json" | head -1)
[[ -n $VERSION ]] || { echo "bun-runtime.sh: node_modules/bun/package.json has no version (npm ci first)" >&2; exit 1; }
DIR=$ROOT/node_modules/.cache/bun-runtime/$TARGET-$VERSION
BUN=$DIR/package/bin/bun
if [[ ! -x $BUN ]]; then
  mkdir -p "$(dirname "$DIR")"
  WORK=$(mktemp -d "$(dirname "$DIR")/.fetch.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  # the package's name is the target's with npm's scope: @oven/bun-linux-aarch64
  (cd "$WORK" && npm pack --silent "@oven/$TARGET@$VERSION" >/dev/null)
  tar -xzf "$WORK"/*.tgz -C "$WORK"
  [[ -x $WORK/package/bin/bun ]] || { echo "bun-runtime.sh: @oven/$TARGET@$VERSION has no package/bin/bun" >&2; exit 1; }
  rm -f "$WORK"/*.tgz
  rm -rf "$DIR"
  mv "$WORK" "$DIR"
fi
echo "$BUN"
