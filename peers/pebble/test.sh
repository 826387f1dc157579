#!/usr/bin/env bash
# Vets and tests the Pebble harness (dataset vectors, protocol, load/inspect/read).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted: $unformatted" >&2
	exit 1
fi
go vet ./...
go test ./...
