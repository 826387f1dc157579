#!/usr/bin/env bash
# Runs a test program against a real Linux kernel's zoned block device: boots
# Debian's kernel under QEMU (software emulation, no KVM) with an emulated NVMe
# controller whose namespace is zoned (zone capacity below zone size, open and
# active zone limits), runs the program in the guest on /dev/nvme0n1 and exits
# with its status.
#
#   scripts/qemu-zns.sh [OPTIONS] [--] [BINARY [ARGS...]]
#
# BINARY is a statically linked program (or a busybox sh script, with the
# static programs it runs given by --add); it runs in the guest as
# /bin/<its name> with ARGS, from /tmp, as root. Without BINARY the stand-in
# test program crates/shale-zoned-probe is built static and run on the device
# with the namespace's geometry as its expectations. Docs: docs/zoned.md,
# "Testing on a real kernel (QEMU)".
#
# What it needs (installed with apt-get when run as root, else named):
# qemu-system-x86, cpio, kmod, file. Debian's kernel (the package
# linux-image-amd64 points to) and busybox-static are fetched with
# `apt-get download` and unpacked into a cache, never installed on this
# machine: the NVMe modules and the kernel are all the guest needs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
    cat <<'USAGE'
usage: scripts/qemu-zns.sh [OPTIONS] [--] [BINARY [ARGS...]]

  --add FILE             also put FILE in the guest's /bin (repeatable)
  --zone-size SIZE       zone size (default 1M; a power of two)
  --zone-capacity SIZE   writable bytes per zone (default 768K; below the size)
  --zones N              number of zones (default 64)
  --max-open N           open zone limit (default 14)
  --max-active N         active zone limit (default 14)
  --block-size BYTES     logical block size (default 4096)
  --memory SIZE          guest memory (default 512M)
  --timeout SECONDS      limit for the whole boot and test (default 300)
  --keep                 keep the work directory (console log, image)
  --verbose              print the guest's console as it runs
  --no-install           never run apt-get install
  -h, --help             this text

SIZE takes K, M and G suffixes (powers of 1024). Kernel and busybox are cached
in $SHALE_QEMU_CACHE (default ~/.cache/shale-qemu-zns).
USAGE
}

die() {
    echo "qemu-zns: $*" >&2
    exit 1
}
bad_input() {
    echo "qemu-zns: $*" >&2
    exit 2
}
usage_error() {
    echo "qemu-zns: $*" >&2
    usage >&2
    exit 2
}

zone_size=1M
zone_capacity=768K
zones=64
max_open=14
max_active=14
block_size=4096
memory=512M
timeout_s=300
keep=0
verbose=0
install=1
adds=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --add) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; adds+=("$2"); shift 2 ;;
        --zone-size) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; zone_size=$2; shift 2 ;;
        --zone-capacity) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; zone_capacity=$2; shift 2 ;;
        --zones) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; zones=$2; shift 2 ;;
        --max-open) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; max_open=$2; shift 2 ;;
        --max-active) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; max_active=$2; shift 2 ;;
        --block-size) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; block_size=$2; shift 2 ;;
        --memory) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; memory=$2; shift 2 ;;
        --timeout) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; timeout_s=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --verbose) verbose=1; shift ;;
        --no-install) install=0; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        -*) usage_error "unknown option '$1'" ;;
        *) break ;;
    esac
done
cmd=("$@")

# SIZE -> bytes.
bytes() {
    local v=$1 n mult=1
    case $v in
        *[kK]) n=${v%?}; mult=1024 ;;
        *[mM]) n=${v%?}; mult=$((1024 * 1024)) ;;
        *[gG]) n=${v%?}; mult=$((1024 * 1024 * 1024)) ;;
        *) n=$v ;;
    esac
    [[ $n =~ ^[0-9]+$ ]] || usage_error "'$v' is not a size (a number with an optional K, M or G)"
    echo $((n * mult))
}
zone_bytes=$(bytes "$zone_size")
capacity_bytes=$(bytes "$zone_capacity")
block_bytes=$(bytes "$block_size")
for n in zones max_open max_active timeout_s; do
    [[ ${!n} =~ ^[0-9]+$ ]] || usage_error "--${n//_/-}: '${!n}' is not a number"
done
((zone_bytes > 0 && (zone_bytes & (zone_bytes - 1)) == 0)) ||
    usage_error "--zone-size $zone_size: Linux takes only zone sizes that are powers of two"
((capacity_bytes > 0 && capacity_bytes <= zone_bytes && capacity_bytes % block_bytes == 0)) ||
    usage_error "--zone-capacity $zone_capacity: must be a multiple of the block size, at most the zone size"
((zones > 0)) || usage_error "--zones must be at least 1"

# Removes what a run leaves behind (the work directory unless --keep, and a
# half-unpacked package when a check stopped the run).
# shellcheck disable=SC2317 # (called by the trap)
cleanup() {
    rm -rf "${kt:-}" "${bt:-}"
    if [[ $keep -eq 0 ]]; then
        rm -rf "${work:-}"
    fi
}
trap cleanup EXIT

# 1. Packages.
as_root() { [[ $(id -u) -eq 0 ]]; }
missing=()
for pair in qemu-system-x86_64:qemu-system-x86 cpio:cpio depmod:kmod file:file; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ $install -eq 1 ]] && as_root && command -v apt-get >/dev/null; then
        echo "qemu-zns: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
            { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
            die "apt-get install ${missing[*]} failed"
    else
        die "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
    fi
fi
qemu="qemu-system-x86_64"
"$qemu" -device nvme-ns,help 2>/dev/null | grep -q 'zoned.zone_capacity' ||
    die "$("$qemu" --version | head -1) has no zoned NVMe namespaces (nvme-ns zoned.* properties)"

# 2. Debian's kernel and busybox-static, unpacked into the cache.
cache=${SHALE_QEMU_CACHE:-${XDG_CACHE_HOME:-${HOME:-$root/target}/.cache}/shale-qemu-zns}
mkdir -p "$cache"
candidate() { apt-cache show --no-all-versions "$1" 2>/dev/null | awk '/^Version:/ { print $2; exit }'; }
kernel_pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')
if [[ -z $kernel_pkg ]] && as_root; then
    apt-get update -qq
    kernel_pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')
fi
[[ -n $kernel_pkg ]] || die "apt-cache knows no linux-image-amd64 (run apt-get update as root)"
kernel_ver=$(candidate "$kernel_pkg")
busybox_ver=$(candidate busybox-static)
[[ -n $kernel_ver && -n $busybox_ver ]] || die "apt-cache has no version of $kernel_pkg or busybox-static"

# Downloads package $1 into directory $2 and unpacks it into $2/root.
fetch() {
    (cd "$2" && apt-get download -qq -o APT::Sandbox::User=root "$1") ||
        die "apt-get download $1 failed"
    dpkg-deb -x "$2"/*.deb "$2/root"
}

kdir=$cache/$kernel_pkg-$kernel_ver
if [[ ! -f $kdir/ready ]]; then
    echo "qemu-zns: fetching $kernel_pkg $kernel_ver (Debian's kernel)"
    # Unpacked beside the cache entry and renamed into place at the end, so
    # that an interrupted or concurrent run never leaves a half entry.
    rm -rf "$kdir"
    kt=$(mktemp -d "$cache/.fetch.XXXXXX")
    mkdir -p "$kt/modules"
    fetch "$kernel_pkg" "$kt"
    kroot=$kt/root
    krel=$(ls "$kroot/lib/modules")
    config=$kroot/boot/config-$krel
    grep -q '^CONFIG_BLK_DEV_ZONED=y' "$config" ||
        die "$kernel_pkg is built without CONFIG_BLK_DEV_ZONED: it has no zoned block devices"
    grep -Eq '^CONFIG_BLK_DEV_NVME=[ym]' "$config" ||
        die "$kernel_pkg is built without the NVMe driver (CONFIG_BLK_DEV_NVME)"
    # The NVMe driver and what it depends on (softdeps too), in load order.
    depmod -b "$kroot" "$krel"
    modprobe -d "$kroot" -S "$krel" --show-depends nvme |
        awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$kt/paths"
    : > "$kt/modules/order"
    while read -r path; do
        cp "$path" "$kt/modules/"
        basename "$path" >> "$kt/modules/order"
    done < "$kt/paths"
    cp "$kroot/boot/vmlinuz-$krel" "$kt/vmlinuz"
    cp "$config" "$kt/config"
    rm -rf "$kroot" "$kt"/*.deb "$kt/paths"
    touch "$kt/ready"
    mv -T "$kt" "$kdir" 2>/dev/null || rm -rf "$kt"
fi
bdir=$cache/busybox-static-$busybox_ver
if [[ ! -f $bdir/ready ]]; then
    echo "qemu-zns: fetching busybox-static $busybox_ver"
    rm -rf "$bdir"
    bt=$(mktemp -d "$cache/.fetch.XXXXXX")
    fetch busybox-static "$bt"
    cp "$bt/root/bin/busybox" "$bt/busybox"
    rm -rf "$bt/root" "$bt"/*.deb
    touch "$bt/ready"
    mv -T "$bt" "$bdir" 2>/dev/null || rm -rf "$bt"
fi

# 3. The test program.
device=/dev/nvme0n1
if [[ ${#cmd[@]} -eq 0 ]]; then
    echo "qemu-zns: building the probe (static)"
    RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -q -p shale-zoned-probe \
        --manifest-path "$root/Cargo.toml" --target x86_64-unknown-linux-gnu \
        --target-dir "$root/target/qemu-zns"
    cmd=("$root/target/qemu-zns/x86_64-unknown-linux-gnu/release/shale-zoned-probe" "$device"
        --expect-zone-size "$zone_bytes" --expect-zone-capacity "$capacity_bytes"
        --expect-max-open "$max_open" --expect-max-active "$max_active")
fi
# Every program put in the guest must run without a dynamic loader.
check_static() {
    [[ -f $1 ]] || bad_input "$1: no such file"
    if [[ $(head -c 2 "$1") == "#!" ]]; then
        return
    fi
    local what
    what=$(file -bL "$1")
    case $what in
        ELF*static-pie\ linked* | ELF*statically\ linked*) ;;
        ELF*) bad_input "$1 is dynamically linked; build it with RUSTFLAGS=\"-C target-feature=+crt-static\" --target x86_64-unknown-linux-gnu ($what)" ;;
        *) bad_input "$1 is neither an ELF program nor a script ($what)" ;;
    esac
}
for f in "${cmd[0]}" "${adds[@]}"; do
    check_static "$f"
done

# 4. The initramfs.
work=$(mktemp -d "${TMPDIR:-/tmp}/qemu-zns.XXXXXX")
ird=$work/initramfs
mkdir -p "$ird"/{bin,dev,etc,lib/modules,proc,sys,tmp}
cp "$bdir/busybox" "$ird/bin/busybox"
cp "$root/scripts/qemu-zns/init" "$ird/init"
cp "$kdir"/modules/* "$ird/lib/modules/"
for f in "${cmd[0]}" "${adds[@]}"; do
    cp "$f" "$ird/bin/"
done
chmod 755 "$ird/init" "$ird"/bin/*
# Single-quoted for the guest's shell.
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
    echo "DEVICE=$device"
    echo "WAIT=30"
    printf 'set --'
    printf ' %s' "$(quote "/bin/$(basename "${cmd[0]}")")"
    for a in "${cmd[@]:1}"; do
        printf ' %s' "$(quote "$a")"
    done
    echo
} > "$ird/etc/qemu-zns.conf"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$work/initramfs.gz"

# 5. The zoned namespace's backing file (sparse) and the guest.
truncate -s $((zones * zone_bytes)) "$work/zns.img"
# TCG (no KVM in CI); -cpu max so that the kernel's CPU-specific modules (the
# CRC of NVMe's protection information) load; no NIC (its option ROM slows the
# boot and the guest needs no network); panic=-1 with -no-reboot ends QEMU on
# a kernel panic, and oops=panic makes an oops one. Linux takes zoned
# namespaces only with a zone size of a power of two blocks.
qemu_cmd=("$qemu" -accel tcg -cpu max -smp 1 -m "$memory" -nographic -no-reboot -nic none
    -kernel "$kdir/vmlinuz" -initrd "$work/initramfs.gz"
    -append "console=ttyS0 quiet panic=-1 oops=panic mitigations=off"
    -drive "file=$work/zns.img,id=zns,format=raw,if=none"
    -device "nvme,id=nvme0,serial=shale-zns"
    -device "nvme-ns,drive=zns,bus=nvme0,nsid=1,logical_block_size=$block_bytes,physical_block_size=$block_bytes,zoned=true,zoned.zone_size=$zone_bytes,zoned.zone_capacity=$capacity_bytes,zoned.max_open=$max_open,zoned.max_active=$max_active")
echo "qemu-zns: booting $kernel_pkg $kernel_ver under TCG: $zones zones of $zone_size ($zone_capacity writable), max open $max_open, max active $max_active; timeout ${timeout_s} s"
if [[ $verbose -eq 1 ]]; then
    echo "qemu-zns: ${qemu_cmd[*]}"
fi
echo "qemu-zns: running $(basename "${cmd[0]}") ${cmd[*]:1}"
log=$work/console.log
start=$SECONDS
set +e
if [[ $verbose -eq 1 ]]; then
    timeout -k 10 "$timeout_s" "${qemu_cmd[@]}" </dev/null 2>&1 | tee "$log"
    qemu_status=${PIPESTATUS[0]}
else
    timeout -k 10 "$timeout_s" "${qemu_cmd[@]}" </dev/null >"$log" 2>&1
    qemu_status=$?
fi
set -e
elapsed=$((SECONDS - start))

# 6. The result.
# The console without SeaBIOS's terminal escapes and carriage returns.
strip_terminal() { sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g; s/\r$//'; }
console_tail() {
    if [[ $keep -eq 1 ]]; then
        echo "qemu-zns: the console's last 40 lines (all of it in $log):" >&2
    else
        echo "qemu-zns: the console's last 40 lines (--keep keeps all of it):" >&2
    fi
    tail -n 40 "$log" | strip_terminal >&2
}
if [[ $keep -eq 1 ]]; then
    echo "qemu-zns: work directory kept: $work"
fi
if [[ $qemu_status -eq 124 || $qemu_status -eq 137 ]]; then
    console_tail
    die "FAIL: no result within ${timeout_s} s (timed out)"
fi
result=$(grep -a -o 'QEMU-ZNS-RESULT: [0-9]*' "$log" | tail -n 1 | awk '{ print $2 }' || true)
if [[ -z $result ]]; then
    console_tail
    die "FAIL: the guest printed no QEMU-ZNS-RESULT line (QEMU exited with $qemu_status after ${elapsed} s)"
fi
if [[ $verbose -eq 0 ]]; then
    # The test's own output: from the run line to the result line.
    sed -n '/QEMU-ZNS-RUN:/,/QEMU-ZNS-RESULT:/p' "$log" | strip_terminal | sed 's/^.*QEMU-ZNS-RUN:/QEMU-ZNS-RUN:/'
fi
if [[ $result -eq 0 ]]; then
    echo "qemu-zns: PASS in ${elapsed} s (boot, test and power-off)"
else
    echo "qemu-zns: FAIL: the test exited with $result after ${elapsed} s" >&2
fi
exit "$result"
