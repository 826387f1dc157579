#!/bin/busybox sh
# shellcheck shell=dash
# shale on a real kernel's zoned block device: run in the QEMU guest by
#
#   scripts/qemu-zns.sh --add target/x86_64-unknown-linux-gnu/release/shale -- \
#       scripts/qemu-zns/shale.sh /dev/nvme0n1 [KEYS]
#
# (`shale` built static; see docs/zoned.md, "Command line"). Formats the
# namespace with the zone file system, loads KEYS keys of the dataset with
# small memtables (so that flushes and compactions write, remove and reuse
# zones), prints its space and files and checks it (metadata against the
# zones' write pointers, every byte of every file read), then reads every key
# back in another process, which mounts the file system again (a remount
# recovers from the metadata log); one more write, every key again and a last
# check after that. Stops at the first failing step with its status.
set -e
dev=${1:-/dev/nvme0n1}
keys=${2:-50000}

# Runs a step; its standard error goes through a file (the console is a
# terminal, where progress bars would be drawn) and is printed after it.
# The step's own lines go to standard error, so that its output can be
# redirected.
step() {
    echo "shale.sh: $*" >&2
    status=0
    "$@" 2>/tmp/stderr || status=$?
    cat /tmp/stderr >&2
    if [ "$status" -ne 0 ]; then
        echo "shale.sh: FAILED (exit status $status): $*" >&2
        exit "$status"
    fi
}

step shale zoned mkfs --device "$dev"
# 256 KiB memtables: about 30 flushes and several compactions for 50,000
# keys, which remove files and so reset and reuse zones.
# One writer thread: the guest has one CPU.
step shale load --zoned "$dev" --keys "$keys" --write-buffer-size 262144 --threads 1
step shale stats --zoned "$dev" --json > /tmp/stats.json
grep -q "\"entries\": $keys," /tmp/stats.json || {
    echo "shale.sh: stats does not count $keys entries:"
    grep '"entries"' /tmp/stats.json
    exit 1
}
step shale zoned df --device "$dev"
step shale zoned ls --device "$dev" > /tmp/ls.txt
tail -n 1 /tmp/ls.txt
# Metadata against the zones' write pointers, and every byte of every file.
step shale zoned check --device "$dev"
# Another process: the file system is mounted again from the device.
step shale load --zoned "$dev" --keys "$keys" --verify --threads 1
step shale put --zoned "$dev" after-remount yes
step shale get --zoned "$dev" after-remount > /tmp/got
test "$(cat /tmp/got)" = yes || { echo "shale.sh: get after-remount printed $(cat /tmp/got)"; exit 1; }
step shale load --zoned "$dev" --keys "$keys" --verify --threads 1
step shale zoned check --device "$dev"
echo "shale.sh: all steps passed"
