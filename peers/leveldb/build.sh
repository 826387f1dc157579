#!/usr/bin/env bash
# Builds <repo>/target/peers/shale-leveldb-harness (and, with --test, the
# test binary shale-leveldb-harness-test next to it). Works from any cwd. With
# SANITIZE=1: built with ASan and UBSan into <repo>/target/peers-sanitized/
# instead (see ../cpp-common/build-common.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
common="$repo/peers/cpp-common"
# shellcheck source=../cpp-common/build-common.sh
source "$common/build-common.sh"

ensure_packages g++ libleveldb-dev libsnappy-dev nlohmann-json3-dev

out="$(peers_out "$repo")"
obj="$out/obj/leveldb"
CXX="${CXX:-g++}"
CXXFLAGS=(-O2 -std=c++17 -pthread -Wall -Wextra)
LIBS=(-lleveldb -lsnappy)
sanitize_flags

srcs=("$here/leveldb_engine.cc" "$here/table_layout.cc" "$common/harness.cc" "$common/ycsb.cc" "$common/ycsb_op.cc" "$here/main.cc")
[ "${1:-}" = "--test" ] && srcs+=("$here/test.cc" "$common/test_common.cc" "$common/ycsb_test.cc")
compile "$obj" "${srcs[@]}"

lib_objs=("$obj/leveldb_engine.o" "$obj/table_layout.o" "$obj/harness.o" "$obj/ycsb.o" "$obj/ycsb_op.o")
"$CXX" "${CXXFLAGS[@]}" -o "$out/shale-leveldb-harness" "$obj/main.o" "${lib_objs[@]}" "${LIBS[@]}"
echo "built $out/shale-leveldb-harness" >&2
if [ "${1:-}" = "--test" ]; then
  "$CXX" "${CXXFLAGS[@]}" -o "$out/shale-leveldb-harness-test" "$obj/test.o" "$obj/test_common.o" "$obj/ycsb_test.o" \
    "${lib_objs[@]}" "${LIBS[@]}"
  echo "built $out/shale-leveldb-harness-test" >&2
fi
