#!/bin/sh
# A full disk (ENOSPC, on a 64 KiB tmpfs): qb-pack and qb-drain --commit
# fail with exit 74 naming the file, and leave no temporary file behind
# to keep the disk full, whether the write fails while the file is being
# filled or when it is closed. Standard output on /dev/full is an I/O
# error too.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip_all "a tmpfs mount needs root"
command -v jq >/dev/null 2>&1 || skip_all "jq is needed"
F=$T/full
mkdir "$F"
mount -t tmpfs -o size=64k tmpfs "$F" 2>/dev/null || skip_all "mount -t tmpfs failed"
trap 'umount "$F" 2>/dev/null; _cleanup' EXIT
plan 14

# items N BYTES: N items with a BYTES-long string in each body
items() {
	pad=$(head -c "$2" /dev/zero | tr '\0' x)
	i=1
	while [ "$i" -le "$1" ]; do
		printf '{"id":"doc-%d","body":{"model":"m","input":"%s"}}\n' "$i" "$pad"
		i=$((i + 1))
	done
}
temps() { find "$F" -name '*.tmp.*' | wc -l | tr -d ' '; }

# 200 KiB: held in the writer's buffers, the write fails at the close.
items 200 1000 >"$T/small"
check_exit 74 "qb-pack: the disk fills at the close" qb-pack -d "$F" "$T/small"
like "$(cat "$T/err")" "$F/.qb-pack.tmp." "the message names the file"
like "$(cat "$T/err")" "No space left on device" "and says why"
is "$(temps)" 0 "no temporary file left"

# 4 MiB: the write fails while lines are still being packed.
items 1000 4000 >"$T/big"
check_exit 74 "qb-pack: the disk fills mid-write" qb-pack -d "$F" "$T/big"
like "$(cat "$T/err")" "No space left on device" "ENOSPC reported"
is "$(temps)" 0 "no temporary file left"

# Two groups (two models): the second one dies, the first one's open
# temporary file goes too.
{ items 1000 4000; items 10 10 | sed 's/doc-/other-/; s/"m"/"m2"/'; } >"$T/two"
check_exit 74 "qb-pack: two open files" qb-pack -d "$F" "$T/two"
is "$(temps)" 0 "neither temporary file left"

# qb-drain --commit: the window file cannot be written; the messages stay.
items 200 1000 | qb-drain --enqueue -Q dir:"$T/spool"
check_exit 74 "qb-drain --commit on a full disk" \
	qb-drain -Q dir:"$T/spool" -n 500 -t 0.2 --commit -o "$F/window.jsonl"
like "$(cat "$T/err")" "$F/window.jsonl" "the message names the window file"
is "$(temps):$(ls "$F" | wc -l | tr -d ' ')" "0:0" "no window.jsonl.tmp.* and no window file"
is "$(find "$T/spool/new" "$T/spool/cur" -type f | wc -l | tr -d ' ')" 200 \
	"no message deleted"

# Standard output on /dev/full.
items 5 10 | qb-drain --enqueue -Q dir:"$T/spool2"
check_exit 74 "qb-drain: standard output on /dev/full" \
	sh -c "qb-drain -Q dir:'$T/spool2' -n 5 -t 0.2 >/dev/full"
done_testing
