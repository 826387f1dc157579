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
