#!/bin/sh
# buildroot post-build script: give the image what the Debian-package
# recipe (lockstudy/image.py) gives it besides the overlay.
#  - the trimmed dbench loadfile, from the dbench package's client.txt,
#    cut to the number of lines disk-image/image.toml names;
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
head -n "$lines" "$loadfile" > "$target/opt/lockstudy/share/dbench-client.txt"
rm -f "$loadfile"
ln -sf /init "$target/sbin/init"
ln -sf /init "$target/linuxrc"
mkdir -p "$target/scratch"
