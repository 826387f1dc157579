#!/usr/bin/env bash
# Builds the C API (crates/shale-capi: libshale_capi.a and .so, release) and
# tests it from C and from Go, installing what it needs first (gcc as a Debian
# package when run as root; Go modules through the Go module proxy).
#
#   scripts/capi.sh          both parts below
#   scripts/capi.sh c        the header check and the crate's Rust tests; the C
#                            test (crates/shale-capi/tests/c/api_test.c) and the
#                            README's C example under AddressSanitizer (leaks
#                            detected) and UndefinedBehaviorSanitizer, against
#                            the static library; the example once more against
#                            the shared library
#   scripts/capi.sh go       go vet, gofmt and `go test -race` of bindings/go
#                            (the shale and ethdb packages, go-ethereum's
#                            dbtest suite, the README's Go example)
#
# Any failure, and any missing tool it cannot install, fails the script: it
# never skips a part.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../peers/cpp-common/build-common.sh
source "$root/peers/cpp-common/build-common.sh"

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(c go)
for p in "${parts[@]}"; do
    case "$p" in c | go) ;; *) echo "capi.sh: unknown part '$p' (known: c go)" >&2; exit 2 ;; esac
done

out="$root/target/capi"
mkdir -p "$out"

build_library() {
    echo "== shale-capi: release build (libshale_capi.a, libshale_capi.so)"
    (cd "$root" && cargo build --release -q -p shale-capi)
    test -f "$root/target/release/libshale_capi.a"
    test -f "$root/target/release/libshale_capi.so"
}

# readme_block HEADING LANG: the first ```LANG block after the README heading.
readme_block() {
    python3 - "$root/README.md" "$1" "$2" <<'PY'
import sys
text = open(sys.argv[1]).read()
head = text.index("\n## " + sys.argv[2] + "\n")
start = text.index("```" + sys.argv[3] + "\n", head) + len(sys.argv[3]) + 4
print(text[start:text.index("```\n", start)], end="")
PY
}

part_c() {
    ensure_packages gcc libc6-dev
    build_library
    echo "== shale-capi: header check and Rust tests"
    (cd "$root" && cargo test -q -p shale-capi)

    local cflags=(-std=c11 -Wall -Wextra -Werror -g -O1 -I"$root/crates/shale-capi/include")
    local san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    local libs=("$root/target/release/libshale_capi.a" -lpthread -ldl -lm -lrt -lutil -lgcc_s)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

    echo "== C API test under ASan (leak detection on) and UBSan"
    gcc "${cflags[@]}" "${san[@]}" "$root/crates/shale-capi/tests/c/api_test.c" "${libs[@]}" -o "$out/api_test"
    "$out/api_test" 2>&1 | tee "$out/api_test.log"
    grep -Eq '^[0-9]+ passed, 0 failed$' "$out/api_test.log"
    if grep -q 'Sanitizer' "$out/api_test.log"; then
        echo "capi.sh: a sanitizer reported an error" >&2
        exit 1
    fi

    echo "== the README's C example, under the sanitizers (static) and with the shared library"
    readme_block "Using shale from C" c > "$out/readme_example.c"
    gcc "${cflags[@]}" "${san[@]}" "$out/readme_example.c" "${libs[@]}" -o "$out/readme_example"
    (cd "$out" && rm -rf example-db && ./readme_example | tee readme_example.log && rm -rf example-db)
    grep -q '^bob = 20$' "$out/readme_example.log"
    gcc "${cflags[@]}" "$out/readme_example.c" -L"$root/target/release" -lshale_capi \
        -Wl,-rpath,"$root/target/release" -o "$out/readme_example_shared"
    (cd "$out" && ./readme_example_shared > /dev/null && rm -rf example-db)
}

part_go() {
    if ! command -v go >/dev/null; then
        echo "capi.sh: no Go toolchain (go) on PATH: the Go bindings cannot be tested" >&2
        exit 1
    fi
    ensure_packages gcc libc6-dev
    build_library
    local gomod="$root/bindings/go"
    echo "== bindings/go: gofmt, go vet"
    local unformatted
    unformatted=$(cd "$gomod" && gofmt -l .)
    if [ -n "$unformatted" ]; then
        echo "capi.sh: not gofmt'ed: $unformatted" >&2
        exit 1
    fi
    (cd "$gomod" && go vet ./...)
    echo "== bindings/go: the README's Go example is example_test.go's"
    readme_block "Using shale from Go (and geth's ethdb)" go > "$out/readme_example.go"
    python3 - "$out/readme_example.go" "$gomod/example_test.go" <<'PY'
import sys
block, source = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert block.strip() and block in source, "the README's Go example is not in bindings/go/example_test.go"
PY
    echo "== bindings/go: go test -race (with go-ethereum's whole ethdb/dbtest suite)"
    (cd "$gomod" && go test -race -count=1 ./...)
}

for p in "${parts[@]}"; do
    "part_$p"
done
