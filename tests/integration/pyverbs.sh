#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=none timeout=420 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's own test suite (python3-pyverbs) against this guest's device,
# through pyverbs-run.py, which records every test's outcome: no test may
# fail or error (a failed subtest fails its test), at least min_passed
# must pass, the report must hold exactly the release's number of tests,
# and every skip's message must be one of Documentation/pyverbs.md's skip
# table, whole. Some 2 MiB huge pages are reserved first: the suite's huge
# page tests need them.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd python3 gunzip
suite=/usr/share/doc/rdma-core/tests
[[ -f $suite/run_tests.py ]] || fail "$suite is missing (python3-pyverbs; make deps)"
python3 -c "import pyverbs" 2>/dev/null || fail "pyverbs is not importable"
doc=$SROCE_TOP/Documentation/pyverbs.md
# The release of the root's suite (Debian 12: 44; trixie: 56; sid: 65)
# sets the floor of passes (pyverbs.md's figures) and what is left out:
# tests not run, each recorded as a skip with its reason (a row of the
# skip table).
rdma_core=$(dpkg-query -W -f='${Version}' python3-pyverbs)
rdma_core=${rdma_core%%.*}
declare -A floor=([44]=132 [56]=138 [65]=175)
[[ -n ${floor[$rdma_core]:-} ]] || fail "no floor for rdma-core $rdma_core's suite (pyverbs.md)"
min_passed=${floor[$rdma_core]}
# How many tests the release's suite holds (pyverbs.md's passed + failed +
# skipped): the report has one line per test, so a test that goes missing
# (never loaded, or run without reporting an outcome), and a suite other
# than the one measured, changes the count.
declare -A size=([44]=273 [56]=321 [65]=390)
[[ -n ${size[$rdma_core]:-} ]] || fail "no test count for rdma-core $rdma_core's suite (pyverbs.md)"
exclude=()
case $rdma_core in
56 | 65)
	# Where a raw packet QP the device refuses ends a resource set's
	# constructor, pyverbs later closes its CQs after their context
	# (EBADF) and libibverbs segfaults, ending the run (rdma_rxe too).
	# Those tests skip on sroce anyway (raw packet QPs): not run.
	why="not run: rdma-core $rdma_core's suite crashes after raw packet QP resource skips"
	for t in 'tests.test_flow.*' 'tests.test_rss_traffic.*' 'tests.test_mlx5_timestamp.*_raw_*'; do
		exclude+=(--exclude "$t=$why")
	done
	;;
esac

work=$(mktemp -d /tmp/pyverbs.XXXXXX)
cp -r "$suite" "$work/tests"
gunzip "$work"/tests/*.gz
echo 16 >/proc/sys/vm/nr_hugepages
idx=$(gid_index "$SROCE_DEV" 4)
report=$SROCE_OUT/pyverbs-report.tsv
log "rdma-core $rdma_core's tests on $SROCE_DEV (RoCEv2 IPv4 GID $idx)"
with_timeout 360 python3 "$SROCE_TOP/tests/integration/pyverbs-run.py" "$work/tests" \
	"$report" "${exclude[@]}" --dev "$SROCE_DEV" --port 1 --gid "$idx" >"$SROCE_OUT/pyverbs.txt" 2>&1 ||
	true	# the verdict comes from the report
tail -n 4 "$SROCE_OUT/pyverbs.txt"
[[ -s $report ]] || { tail -n 30 "$SROCE_OUT/pyverbs.txt"; fail "the suite wrote no report"; }

# The documented skip messages: the first column of the skip table, each
# a whole message, "*" standing for a variable part (an error's text). Each
# becomes an anchored regular expression: a row matches its message only,
# not a longer one that contains it ("Create Extended CQ is not supported"
# is not "Extended CQ is not supported").
# shellcheck disable=SC2016 # backquotes of Markdown, not of the shell
mapfile -t known < <(sed -n '/<!-- skip-table: begin -->/,/<!-- skip-table: end -->/p' "$doc" |
	sed -n 's/^| `\([^`]*\)` |.*/\1/p' |
	sed 's/[][\.^$+?(){}|]/\\&/g; s/\*/.*/g; s/.*/^&$/')
((${#known[@]} > 0)) || fail "no skip table in $doc"

declare -A count=([pass]=0 [fail]=0 [error]=0 [skip]=0 [xfail]=0 [xpass]=0)
bad=0
while IFS=$'\t' read -r outcome id reason; do
	count[$outcome]=$((${count[$outcome]:-0} + 1))
	case $outcome in
	pass | xfail) ;;
	skip)
		documented=0
		for k in "${known[@]}"; do
			[[ $reason =~ $k ]] && { documented=1; break; }
		done
		((documented)) || { echo "  undocumented skip: $id: $reason" >&2; bad=1; }
		;;
	*)
		echo "  $outcome: $id: ${reason:0:300}" >&2
		bad=1
		;;
	esac
done <"$report"
total=$(wc -l <"$report")
log "$total tests: ${count[pass]} passed, ${count[fail]} failed, ${count[error]} errors," \
	"${count[skip]} skipped, ${count[xfail]} expected failures, ${count[xpass]} unexpected successes"
awk -F'\t' '$1 == "skip" { print $3 }' "$report" | sort | uniq -c | sort -rn | sed 's/^/  skip: /'
((bad == 0)) || fail "tests failed, errored, reported no outcome or skipped for a reason not in Documentation/pyverbs.md"
((total == size[$rdma_core])) ||
	fail "the report holds $total tests; rdma-core $rdma_core's suite has ${size[$rdma_core]}"
((count[pass] >= min_passed)) || fail "${count[pass]} tests passed, fewer than $min_passed"
log "PASS: no test failed, every skip is documented, all ${size[$rdma_core]} tests reported, ${count[pass]} >= $min_passed passed"
