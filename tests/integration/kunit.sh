#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug pairs=none timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Runs sroce's KUnit suites (sroce_kunit.ko, built only for the debug
# kernel, which has CONFIG_KUNIT) and judges their KTAP results from
# debugfs: fails if a test failed or crashed, if an expected suite did not
# run, or if a suite ran no test at all. The kernel log (also checked by
# the harness for oopses and WARNs) is printed with the results.
set -euo pipefail
. "$SROCE_TOP/tests/integration/lib.sh"

# The suites sroce_kunit.ko defines (tests/kunit/*.c): all must report.
EXPECTED_SUITES="sroce_wire sroce_psn sroce_icrc sroce_rx"
KUNIT_DIR=/sys/kernel/debug/kunit

module=${SROCE_KUNIT_MODULE:-}
[[ -n $module && -r $module ]] ||
	fail "no KUnit module: SROCE_KUNIT_MODULE='${module}' (is this the debug kernel?)"
lsmod | grep -q '^sroce ' || fail "sroce.ko is not loaded"

if [[ ! -d /sys/kernel/debug/kunit ]]; then
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
fi

log_lines=$(dmesg | wc -l)
log "insmod $module"
# KUnit runs a module's suites while it loads: they are done on return.
with_timeout 240 insmod "$module" || fail "insmod sroce_kunit.ko failed"

log "kernel log of the run:"
dmesg | tail -n +"$((log_lines + 1))" | sed 's/^/    dmesg: /'

[[ -d $KUNIT_DIR ]] || fail "$KUNIT_DIR does not exist: KUnit debugfs is missing"

failed=0 passed=0 suites=0
for suite in $EXPECTED_SUITES; do
	results=$KUNIT_DIR/$suite/results
	if [[ ! -r $results ]]; then
		echo "suite $suite: did not run (no $results)"
		failed=$((failed + 1))
		continue
	fi
	suites=$((suites + 1))
	echo "---- $results"
	cat "$results"
	# Test case lines are indented: "    ok 3 - name" / "    not ok 3 - name"
	# (older KTAP) or without the dash; the suite's own line is not.
	ok=$(grep -cE '^[[:space:]]+ok [0-9]+ ' "$results" || true)
	bad=$(grep -cE '^[[:space:]]+not ok [0-9]+ ' "$results" || true)
	# The per-test log in debugfs is bounded and may lose a test's result
	# line: the suite's "# name: pass:P fail:F" summary counts them all.
	summary=$(sed -nE "s/^# $suite: pass:([0-9]+) fail:([0-9]+).*/\1 \2/p" "$results")
	if [[ -n $summary ]]; then
		ok=$((${summary% *} > ok ? ${summary% *} : ok))
		bad=$((${summary#* } > bad ? ${summary#* } : bad))
	fi
	suite_line=$(grep -E '^(not )?ok [0-9]+ ' "$results" | tail -n 1 || true)
	if ((ok == 0)); then
		echo "suite $suite: no test case passed or ran"
		failed=$((failed + 1))
	fi
	if ((bad > 0)) || [[ $suite_line != ok* ]] ||
		grep -qiE 'crashed|timed out' "$results"; then
		echo "suite $suite: FAILED ($bad failed test cases; '$suite_line')"
		failed=$((failed + bad + 1))
	fi
	passed=$((passed + ok))
done

# Suites we do not know yet are judged too, so new ones cannot fail unseen.
for dir in "$KUNIT_DIR"/sroce_*; do
	[[ -d $dir ]] || continue
	name=${dir##*/}
	[[ " $EXPECTED_SUITES " == *" $name "* ]] && continue
	echo "---- $dir/results (suite not in EXPECTED_SUITES)"
	cat "$dir/results"
	if grep -qE '^[[:space:]]*not ok ' "$dir/results"; then
		echo "suite $name: FAILED"
		failed=$((failed + 1))
	fi
done

rmmod sroce_kunit || fail "rmmod sroce_kunit failed"

log "KUnit: $suites suites, $passed test cases passed, $failed failures"
((suites > 0)) || fail "no sroce KUnit suite ran"
((failed == 0)) || fail "KUnit reported failures"
log "all sroce KUnit suites passed"
