# lockstudy run specs: parsing and validation, shared by /init and the tests.
#
# Sourced by busybox sh (/init); the tests source it natively too. Sets or
# prints, never exits: every function returns non-zero with a message in
# LS_ERROR when something is wrong.
#
# Kernel command line (read from /proc/cmdline):
#   lockstudy.run=ITEM[+ITEM...]     the testcases to run, in order
#   lockstudy.checkpoint=0|1         1: gem5 checkpoint after boot, before the first ROI
#   lockstudy.m5ops=off|inst|addr    how the programs reach gem5 (default off)
#   lockstudy.memory_map=0|1         1: print the kernel's memory map after each
#                                    testcase (traced runs: it names their hot lines,
#                                    and walking every page frame costs simulated time)
#
# After a gem5 checkpoint, `m5 readfile` gives the run spec on its first
# line and options on the next ones, one KEY=VALUE each: memory_map=0|1.
#
# ITEM     := TESTCASE[:KEY=VALUE[,KEY=VALUE...]]
# TESTCASE := write1b | fsmix | pft | mmapsem | samefile   (the harness programs in $LS_BIN)
#           | kbench                                       (the kernel's lock bench, also in $LS_BIN)
#           | dd1b | dbench                                (outside programs, timed)
# KEY      := [a-z][a-z0-9_]*
# VALUE    := [A-Za-z0-9_./-]+
# e.g. lockstudy.run=pft:threads=4,mb=64+samefile:threads=2,seconds=2
#
# A harness testcase takes the keys its --help lists (threads=, processes=,
# iterations=, seconds=, warmup=, dir=, ...); kbench takes variant=, cpus=
# (a CPU list with '.' between its parts, as ',' separates the pairs:
# cpus=0-1.4-5), duration_ms=, hold_loops=, think_loops=, placement=, repeat=. dd1b takes count= (bytes, one
# write each; default 1048576 as in the seed) and dir=; dbench takes
# clients=, seconds= (at least 2) and dir=. Relative dirs are under /scratch on the
# root file system (ext2); dir=/tmp is tmpfs.

LS_BIN=${LS_BIN:-/opt/lockstudy/bin}
# The testcases are the programs in $LS_BIN but the tools: a new
# tc_<name>.c in workloads/ needs no change here. Each checks its own
# arguments (PROGRAM ARGS --check).
LS_TOOLS="runtimed m5"
LS_TOOL_TESTCASES="dd1b dbench"
LS_DD1B_KEYS="count dir"
LS_DBENCH_KEYS="clients seconds dir"
LS_ERROR=
LS_HARNESS=

ls_fail() {
	LS_ERROR=$*
	return 1
}

# Sets LS_HARNESS: the harness testcases, space-separated. No subshell here
# or below: /init runs this on the simulated CPU, where every fork costs
# milliseconds of simulated time before the first ROI.
ls_find_harness_testcases() {
	local path name
	LS_HARNESS=
	for path in "$LS_BIN"/*; do
		name=${path##*/}
		[ -f "$path" ] && [ -x "$path" ] || continue
		ls_is_word_in "$name" $LS_TOOLS || LS_HARNESS="$LS_HARNESS$name "
	done
}

ls_is_word_in() {	# WORD LIST...
	local word=$1 each
	shift
	for each in $*; do
		[ "$each" = "$word" ] && return 0
	done
	return 1
}

# Read lockstudy.* from a kernel command line; sets LS_RUN, LS_CHECKPOINT, LS_M5OPS, LS_MEMORY_MAP.
ls_parse_cmdline() {
	local word
	LS_RUN=
	LS_CHECKPOINT=0
	LS_M5OPS=off
	LS_MEMORY_MAP=0
	for word in $1; do
		case $word in
		lockstudy.run=*) LS_RUN=${word#lockstudy.run=} ;;
		lockstudy.checkpoint=*) LS_CHECKPOINT=${word#lockstudy.checkpoint=} ;;
		lockstudy.m5ops=*) LS_M5OPS=${word#lockstudy.m5ops=} ;;
		lockstudy.memory_map=*) LS_MEMORY_MAP=${word#lockstudy.memory_map=} ;;
		esac
	done
	ls_check_memory_map "lockstudy.memory_map" || return 1
	case $LS_CHECKPOINT in
	0|1) ;;
	*) ls_fail "lockstudy.checkpoint=$LS_CHECKPOINT: expected 0 or 1"; return 1 ;;
	esac
	case $LS_M5OPS in
	off|inst|addr) ;;
	*) ls_fail "lockstudy.m5ops=$LS_M5OPS: expected off, inst or addr"; return 1 ;;
	esac
	return 0
}

ls_check_memory_map() {	# WHERE
	case $LS_MEMORY_MAP in
	0|1) return 0 ;;
	esac
	ls_fail "$1=$LS_MEMORY_MAP: expected 0 or 1"
}

# The options `m5 readfile` gives after the run spec's line, one KEY=VALUE per
# line; sets LS_MEMORY_MAP (keeping the command line's when not given).
ls_parse_readfile_options() {	# LINES
	local line
	for line in $1; do
		case $line in
		memory_map=*) LS_MEMORY_MAP=${line#memory_map=} ;;
		*) ls_fail "readfile option '$line': expected memory_map=0|1"; return 1 ;;
		esac
	done
	ls_check_memory_map "readfile memory_map"
}

# What `m5 readfile` gave a restored guest: sets LS_RUN from its first line and
# the options from the others (ls_parse_readfile_options).
ls_parse_readfile() {	# TEXT
	LS_RUN=${1%%
*}
	case $1 in
	*"
"*)	ls_parse_readfile_options "${1#*
}" ;;
	esac
}

# Sets LS_ITEMS: the items of a run spec, space-separated (an item holds
# no blank: ls_validate_run refuses one).
ls_split_run() {	# SPEC
	local IFS=+ item
	LS_ITEMS=
	set -f
	for item in $1; do
		LS_ITEMS="$LS_ITEMS${LS_ITEMS:+ }$item"
	done
	set +f
}

# Sets LS_ITEM_NAME (the testcase) and LS_ITEM_ARGS (its KEY=VALUE words,
# space-separated) from one item.
ls_split_item() {	# ITEM
	local IFS=, kv
	LS_ITEM_NAME=${1%%:*}
	LS_ITEM_ARGS=
	case $1 in
	*:*) ;;
	*) return 0 ;;
	esac
	set -f
	for kv in ${1#*:}; do
		LS_ITEM_ARGS="$LS_ITEM_ARGS${LS_ITEM_ARGS:+ }$kv"
	done
	set +f
}

# The value of KEY in an item's arguments, or DEFAULT.
ls_arg() {	# ARGS KEY DEFAULT
	local kv
	for kv in $1; do
		case $kv in
		"$2"=*) echo "${kv#*=}"; return 0 ;;
		esac
	done
	echo "$3"
}

ls_check_number() {	# ITEM KEY VALUE MIN MAX
	case $3 in
	''|*[!0-9]*) ls_fail "'$1': $2=$3 is not a whole number"; return 1 ;;
	esac
	if [ ${#3} -gt 9 ] || [ "$3" -lt "$4" ] || [ "$3" -gt "$5" ]; then
		ls_fail "'$1': $2=$3 is out of range [$4, $5]"
		return 1
	fi
}

# Syntax of one item, then its keys and values.
ls_validate_item() {
	local item=$1 name args kv key value keys out seen=' '
	ls_split_item "$item"
	name=$LS_ITEM_NAME
	args=$LS_ITEM_ARGS
	case $name in
	'') ls_fail "'$item': no testcase name"; return 1 ;;
	esac
	[ -n "$LS_HARNESS" ] || ls_find_harness_testcases
	if ! ls_is_word_in "$name" $LS_HARNESS $LS_TOOL_TESTCASES; then
		ls_fail "'$item': unknown testcase '$name' (known: $LS_HARNESS$LS_TOOL_TESTCASES)"
		return 1
	fi
	case $item in
	*:) ls_fail "'$item': ':' with no KEY=VALUE after it"; return 1 ;;
	*:*,|*:,*|*:*,,*) ls_fail "'$item': empty KEY=VALUE"; return 1 ;;
	esac
	for kv in $args; do
		case $kv in
		*=*) ;;
		*) ls_fail "'$item': '$kv' is not KEY=VALUE"; return 1 ;;
		esac
		key=${kv%%=*}
		value=${kv#*=}
		case $key in
		''|[!a-z]*|*[!a-z0-9_]*) ls_fail "'$item': bad key '$key' (expected [a-z][a-z0-9_]*)"; return 1 ;;
		esac
		case $value in
		''|*[!A-Za-z0-9_./-]*) ls_fail "'$item': bad value '$value' for $key (expected [A-Za-z0-9_./-]+)"; return 1 ;;
		esac
		# A key given twice would be read as its first value here, its last by the harness.
		case $seen in
		*" $key "*) ls_fail "'$item': key '$key' given twice"; return 1 ;;
		esac
		seen="$seen$key "
	done
	case $name in
	dd1b) keys=$LS_DD1B_KEYS ;;
	dbench) keys=$LS_DBENCH_KEYS ;;
	*)
		if [ ! -x "$LS_BIN/$name" ]; then
			ls_fail "'$item': program $LS_BIN/$name is missing"
			return 1
		fi
		# shellcheck disable=SC2086
		if ! out=$("$LS_BIN/$name" $args --check 2>&1); then
			ls_fail "'$item': $out"
			return 1
		fi
		return 0
		;;
	esac
	for kv in $args; do
		key=${kv%%=*}
		if ! ls_is_word_in "$key" $keys; then
			ls_fail "'$item': unknown key '$key' for $name (known: $keys)"
			return 1
		fi
	done
	case $name in
	dd1b)
		ls_check_number "$item" count "$(ls_arg "$args" count 1)" 1 1073741824 || return 1 ;;
	dbench)
		ls_check_number "$item" clients "$(ls_arg "$args" clients 1)" 1 256 || return 1
		# dbench 4.0 reports 0 MB/s for a 1-second run: it measures from its second second
		ls_check_number "$item" seconds "$(ls_arg "$args" seconds 2)" 2 86400 || return 1 ;;
	esac
	return 0
}

# A whole run spec: every item valid, or LS_ERROR names the first bad one.
# An item given more than once (a repeat) is checked once.
ls_validate_run() {
	local spec=$1 item checked=' '
	case $spec in
	'') return 0 ;;
	+*|*+|*++*) ls_fail "run spec '$spec': empty item between '+'"; return 1 ;;
	*[!A-Za-z0-9_./:,=+-]*) ls_fail "run spec '$spec': characters outside [A-Za-z0-9_./:,=+-]"; return 1 ;;
	esac
	ls_find_harness_testcases
	ls_split_run "$spec"
	for item in $LS_ITEMS; do
		case $checked in
		*" $item "*) continue ;;
		esac
		ls_validate_item "$item" || return 1
		checked="$checked$item "
	done
	return 0
}
