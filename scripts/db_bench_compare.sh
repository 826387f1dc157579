#!/usr/bin/env bash
# Runs one db_bench command line on RocksDB's db_bench and on
# `shale bench db`, each in a fresh directory of its own, and prints their
# result lines side by side with shale's ops/sec over RocksDB's.
#
#   scripts/db_bench_compare.sh [--dir DIR] [--shale BIN] [db_bench flags...]
#
#   scripts/db_bench_compare.sh --num=1000000 --benchmarks=fillrandom,overwrite,readrandom
#
# Flags are passed to both as given (db_bench's spelling: --num=N or
# --num N). Where the two tools' defaults differ, the script passes the same
# explicit value to both unless the command line sets it:
# --compression_type=none (RocksDB's default is snappy, which shale lacks),
# --bloom_bits=10 (RocksDB has no filter by default, shale a binary fuse
# filter), --benchmarks=fillrandom,overwrite,readrandom, --num=1000000.
# Benchmarks RocksDB's db_bench does not know (readhot) run on shale only.
#
# db_bench is Debian's rocksdb-tools (RocksDB 7.8.3), installed with apt-get
# when run as root and db_bench is not on PATH. shale is built with
# `cargo build --release -p shale-cli` unless --shale names a binary.
# The databases live under DIR (default: a new directory under /tmp), which
# is removed at the end unless --dir was given.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

dir=""
shale=""
flags=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --dir) dir=$2; shift 2 ;;
        --dir=*) dir=${1#--dir=}; shift ;;
        --shale) shale=$2; shift 2 ;;
        --shale=*) shale=${1#--shale=}; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --db|--db=*)
            echo "db_bench_compare.sh: --db is chosen by the script (use --dir)" >&2
            exit 2 ;;
        --*=*) flags+=("$1"); shift ;;
        --*)
            # `--flag value`, or a bare boolean flag.
            if [[ $# -gt 1 && $2 != --* ]]; then
                flags+=("$1=$2"); shift 2
            else
                flags+=("$1=true"); shift
            fi ;;
        *) echo "db_bench_compare.sh: unexpected argument '$1'" >&2; exit 2 ;;
    esac
done

has_flag() {
    local f
    for f in "${flags[@]+"${flags[@]}"}"; do
        [[ $f == "--$1="* ]] && return 0
    done
    return 1
}
for default in compression_type=none bloom_bits=10 \
    benchmarks=fillrandom,overwrite,readrandom num=1000000; do
    has_flag "${default%%=*}" || flags+=("--$default")
done

if ! command -v db_bench >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]]; then
        echo "== installing rocksdb-tools (RocksDB's db_bench)" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rocksdb-tools >&2
    else
        echo "db_bench_compare.sh: db_bench is not on PATH; install Debian's rocksdb-tools (as root: apt-get install rocksdb-tools)" >&2
        exit 1
    fi
fi

if [[ -z $shale ]]; then
    echo "== building shale" >&2
    (cd "$root" && cargo build --release -q -p shale-cli) >&2
    shale=$root/target/release/shale
fi

keep=1
if [[ -z $dir ]]; then
    dir=$(mktemp -d /tmp/db-bench-compare.XXXXXX)
    keep=0
fi
mkdir -p "$dir"
rm -rf "$dir/rocksdb" "$dir/shale"

# RocksDB's db_bench knows no readhot: drop it from its list.
rocks_flags=()
for f in "${flags[@]}"; do
    if [[ $f == --benchmarks=* ]]; then
        list=${f#--benchmarks=}
        kept=$(tr ',' '\n' <<<"$list" | grep -vx 'readhot' | paste -sd, -)
        rocks_flags+=("--benchmarks=$kept")
    else
        rocks_flags+=("$f")
    fi
done

echo "== rocksdb: db_bench ${rocks_flags[*]} --db=$dir/rocksdb" >&2
db_bench "${rocks_flags[@]}" --db="$dir/rocksdb" >"$dir/rocksdb.out" 2>"$dir/rocksdb.err" || {
    echo "db_bench failed:" >&2
    cat "$dir/rocksdb.err" >&2
    exit 1
}
echo "== shale: shale bench db ${flags[*]} --db=$dir/shale" >&2
"$shale" bench db "${flags[@]}" --db="$dir/shale" >"$dir/shale.out" 2>"$dir/shale.err" || {
    echo "shale bench db failed:" >&2
    cat "$dir/shale.err" >&2
    exit 1
}

# db_bench redraws progress with carriage returns: keep what follows the last.
lines() { tr '\r' '\n' <"$1" | grep -E '^[a-z0-9]+ +: +[0-9.]+ micros/op' || true; }
lines "$dir/rocksdb.out" >"$dir/rocksdb.lines"
lines "$dir/shale.out" >"$dir/shale.lines"

echo
echo "rocksdb (db_bench ${rocks_flags[*]}):"
sed 's/^/  /' "$dir/rocksdb.lines"
echo "shale (shale bench db ${flags[*]}):"
sed 's/^/  /' "$dir/shale.lines"
echo
# The n-th line of a benchmark on one side goes with the n-th on the other.
awk '
    function ops(line,   m) { return match(line, /[0-9]+ ops\/sec/) ? substr(line, RSTART, RLENGTH - 8) + 0 : -1 }
    function mpo(line,   m) { return match(line, /[0-9.]+ micros\/op/) ? substr(line, RSTART, RLENGTH - 10) + 0 : -1 }
    FNR == 1 { file++ }
    {
        name = $1; seen[file, name]++
        key = name SUBSEP seen[file, name]
        if (file == 1) { r_ops[key] = ops($0); r_mpo[key] = mpo($0) }
        else { s_ops[key] = ops($0); s_mpo[key] = mpo($0); order[++n] = key }
    }
    END {
        printf "%-22s %14s %14s %14s %14s %14s\n", "benchmark", "rocksdb us/op", "shale us/op", "rocksdb ops/s", "shale ops/s", "shale/rocksdb"
        for (i = 1; i <= n; i++) {
            key = order[i]; split(key, parts, SUBSEP)
            if (key in r_ops) {
                ratio = r_ops[key] > 0 ? sprintf("%.2f", s_ops[key] / r_ops[key]) : "-"
                printf "%-22s %14.3f %14.3f %14d %14d %14s\n", parts[1], r_mpo[key], s_mpo[key], r_ops[key], s_ops[key], ratio
            } else {
                printf "%-22s %14s %14.3f %14s %14d %14s\n", parts[1], "-", s_mpo[key], "-", s_ops[key], "(shale only)"
            }
        }
    }
' "$dir/rocksdb.lines" "$dir/shale.lines"

if [[ $keep -eq 0 ]]; then
    rm -rf "$dir"
else
    echo
    echo "outputs in $dir (rocksdb.out, shale.out)"
fi
