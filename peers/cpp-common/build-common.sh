# Shared by peers/leveldb/build.sh and peers/rocksdb/build.sh (sourced, not run).

# ensure_packages PKG... : installs the Debian packages that are missing when
# run as root (apt-get install -y), else names them and fails.
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2 ||
      { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2; }
  else
    echo "missing Debian packages: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})" >&2
    return 1
  fi
}

# compile OBJDIR SRC... : compiles each source to OBJDIR/<name>.o in parallel
# (with $CXX and the CXXFLAGS array) and fails if any fails.
compile() {
  local objdir="$1"; shift
  mkdir -p "$objdir"
  local pids=() src
  for src in "$@"; do
    "$CXX" "${CXXFLAGS[@]}" -c "$src" -o "$objdir/$(basename "${src%.cc}").o" &
    pids+=($!)
  done
  local rc=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  return $rc
}

# With SANITIZE=1 the harnesses and their tests are built with AddressSanitizer
# and UndefinedBehaviorSanitizer (any report aborts) into
# target/peers-sanitized/, so the normal build in target/peers/ stays as it is.
# Only the harness code is instrumented: the system's libleveldb and librocksdb
# are not. `scripts/peers.sh test-sanitized` runs them.
#
# peers_out REPO: the output directory of the harness binaries.
peers_out() {
  if [ "${SANITIZE:-0}" = 1 ]; then echo "$1/target/peers-sanitized"; else echo "$1/target/peers"; fi
}

# sanitize_flags: appends the sanitizer flags to the CXXFLAGS array (compile
# and link) when SANITIZE=1. -O1 overrides the -O2 before it: measured here,
# the sanitized build and test of both harnesses took 4m10s of CPU instead
# of 5m51s, and the reports' stack traces stay exact.
sanitize_flags() {
  case "${SANITIZE:-0}" in
    0) ;;
    1) CXXFLAGS+=(-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined) ;;
    *) echo "SANITIZE must be 0 or 1, not '$SANITIZE'" >&2; return 1 ;;
  esac
}

# sanitizer_env REPO: with SANITIZE=1, exports the runtime options of the
# sanitizers for the test binary and the harness it starts: leaks detected,
# the first report fails the run, and leaks inside the uninstrumented system
# libraries suppressed (peers/cpp-common/lsan.supp, each entry scoped to a
# library).
sanitizer_env() {
  [ "${SANITIZE:-0}" = 1 ] || return 0
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$1/peers/cpp-common/lsan.supp:print_suppressions=1"
}
