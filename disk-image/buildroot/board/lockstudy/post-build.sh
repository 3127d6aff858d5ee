#!/bin/sh
# buildroot post-build script: give the image what the Debian-package
# recipe (lockstudy/image.py) gives it besides the overlay.
#  - the trimmed dbench loadfile, from the dbench package's client.txt:
#    at least the number of lines disk-image/image.toml names, cut at the
#    first line where every file handle opened so far is closed again
#    (the rule of lockstudy/dbench_loadfile.py: dbench replays the file in
#    a loop, so a handle left open leaks a file-table slot per pass);
#  - /sbin/init and /linuxrc pointing at the shared /init.
# $1 is the target directory; BR2_EXTERNAL_LOCKSTUDY_PATH is set by buildroot.
set -eu
target=$1
toml="$BR2_EXTERNAL_LOCKSTUDY_PATH/../image.toml"
lines=$(sed -n 's/^loadfile_lines *= *\([0-9][0-9]*\).*/\1/p' "$toml")
loadfile="$target/usr/share/dbench/client.txt"	# installed by package/lockstudy-dbench
if [ ! -f "$loadfile" ]; then
	echo "post-build: $loadfile not found (is BR2_PACKAGE_LOCKSTUDY_DBENCH set?)" >&2
	exit 1
fi
mkdir -p "$target/opt/lockstudy/share"
# An "NTCreateX ... FNUM NT_STATUS_OK" line opens handle FNUM, a
# "Close FNUM NT_STATUS_OK" line closes it; print up to the first line at or
# after $lines where none is open, and fail if there is no such line.
awk -v at_least="$lines" -v file="$loadfile" '
	$NF == "NT_STATUS_OK" && $1 == "NTCreateX" { if (held[$(NF - 1)]++ == 0) open_count++ }
	$NF == "NT_STATUS_OK" && $1 == "Close" && held[$2] > 0 { if (--held[$2] == 0) open_count-- }
	{ print }
	NR >= at_least && open_count == 0 { balanced = 1; exit }
	END {
		if (!balanced) {
			printf "post-build: %s: no line at or after line %d closes every file handle (%d still open)\n", file, at_least, open_count > "/dev/stderr"
			exit 1
		}
	}' "$loadfile" > "$target/opt/lockstudy/share/dbench-client.txt"
rm -f "$loadfile"
ln -sf /init "$target/sbin/init"
ln -sf /init "$target/linuxrc"
mkdir -p "$target/scratch"
