#!/usr/bin/env bash
# Builds the Pebble harness (build.sh), then vets and tests it (dataset
# vectors, protocol, load/inspect/read), like the C++ peers' test.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/build.sh"
cd "$here"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted: $unformatted" >&2
	exit 1
fi
go vet ./...
go test ./...
