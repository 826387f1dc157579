#!/usr/bin/env bash
# Builds the Pebble harness to <repo>/target/peers/shale-pebble-harness.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/target/peers"
mkdir -p "$out"
cd "$here"
go build -trimpath -o "$out/shale-pebble-harness" .
echo "$out/shale-pebble-harness"
