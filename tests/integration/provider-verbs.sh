#!/bin/bash
# sroce-test: kernels=6.12,debug full-kernels=6.1,6.12,7.2,debug pairs=none timeout=300 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
# The user-space provider against the real device: userspace/tests/
# device_test.cpp (GoogleTest) connects RC and UD QPs of this guest's sroce
# device to each other and checks data, completions and error paths: sends
# of 1 B..1 MiB, gather/scatter, immediate data, RDMA WRITE/READ, atomics,
# inline limits, ENOMEM on a full SQ, posting before RTS, local protection
# and remote access errors with flushes, receives and sends posted to a QP
# in the error state (modify_qp or a fatal error) flushed, CQ resize with
# completions outstanding, completion channel events, UD with GRH, extended
# CQs with and without completion timestamps, a context, PD and MR imported
# from a copy of the command file.
# Passes only if every case the binary lists (--gtest_list_tests) is in the
# report and passed (or is an allowed skip), and the binary lists at least
# FLOOR cases: a suite that lost cases, or a GTEST_FILTER that hides some,
# fails instead of passing on whatever was left.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ -n ${RDMAV_DRIVERS:-} ]] || fail "RDMAV_DRIVERS is not set: the provider was not built"
# An application built against Debian 12's libibverbs: on another release's
# root it runs against that release's libibverbs and the provider built for
# it (tools/sroce-vm), as any program built on an older release would.
bin=$SROCE_BUILD/userspace/tests/sroce_device_tests
[[ -x $bin ]] || fail "$bin is missing (make provider builds it)"

log "device $SROCE_DEV, provider $(echo "${RDMAV_DRIVERS}"-rdmav*.so)"
# Tests that may be skipped (GTEST_SKIP or DISABLED_), each with the reason
# it may be skipped here: [Suite.Test]=reason. Any other skip fails.
declare -A allowed_skips=()
# The number of cases device_test.cpp has (TEST/TEST_F): raise it with them.
FLOOR=20

list=$SROCE_OUT/provider-verbs.list
with_timeout 30 "$bin" --gtest_list_tests >"$list" ||
	fail "sroce_device_tests --gtest_list_tests failed"

xml=$SROCE_OUT/provider-verbs.xml
status=0
SROCE_DEV=$SROCE_DEV with_timeout 240 "$bin" --gtest_output="xml:$xml" ||
	status=$?
[[ $status -eq 0 ]] || fail "sroce_device_tests failed (status $status)"
for t in "${!allowed_skips[@]}"; do
	log "allowed to skip $t: ${allowed_skips[$t]}"
done
# The exit status passes a binary that ran nothing or skipped everything,
# and failures="0" is on every <testsuite>: read the report. The root
# <testsuites> has the totals; every <testcase> is checked too.
python3 - "$xml" "$list" "$FLOOR" "${!allowed_skips[@]}" <<-'EOF' || fail "GoogleTest report $xml"
	import sys
	import xml.etree.ElementTree as ET
	root = ET.parse(sys.argv[1]).getroot()
	floor = int(sys.argv[3])
	allowed = set(sys.argv[4:])
	bad = []
	# --gtest_list_tests: "Suite." lines, then "  Case" lines (either may
	# end in "  # ..." for typed or parameterised tests).
	listed, suite = [], None
	with open(sys.argv[2]) as f:
	    for line in f:
	        word = line.split("#")[0].strip()
	        if not word or line.startswith("Running main()"):
	            continue
	        if not line[0].isspace() and word.endswith("."):
	            suite = word
	        elif line[0].isspace() and suite:
	            listed.append(suite + word)
	if len(listed) < floor:
	    bad.append("the binary lists %d cases, fewer than the floor of %d"
	               % (len(listed), floor))
	if root.tag != "testsuites":
	    bad.append("the root is <%s>, not <testsuites>" % root.tag)
	tests = int(root.get("tests", "0"))
	if tests <= 0:
	    bad.append("tests=%d at the root" % tests)
	for attr in ("failures", "errors"):
	    if root.get(attr) != "0":
	        bad.append("%s=%r at the root" % (attr, root.get(attr)))
	cases = root.findall("./testsuite/testcase")
	if len(cases) != tests:
	    bad.append("%d testcases, but tests=%d at the root" % (len(cases), tests))
	passed, skipped = set(), set()
	for case in cases:
	    name = "%s.%s" % (case.get("classname"), case.get("name"))
	    if case.find("failure") is not None or case.find("error") is not None:
	        bad.append("%s failed" % name)
	    elif (case.get("result") == "skipped" or case.get("status") == "notrun"
	            or case.find("skipped") is not None):
	        if name in allowed:
	            skipped.add(name)
	        else:
	            bad.append("%s was skipped, and is not an allowed skip" % name)
	    elif case.get("status") == "run" and case.get("result", "completed") == "completed":
	        passed.add(name)
	    else:
	        bad.append("%s: status=%r result=%r" % (name, case.get("status"), case.get("result")))
	for name in listed:
	    if name not in passed and name not in skipped:
	        bad.append("%s is listed by the binary but did not pass" % name)
	if len(passed) + len(skipped) != len(listed):
	    bad.append("%d passed and %d allowed skips, but the binary lists %d cases"
	               % (len(passed), len(skipped), len(listed)))
	nfail = len(list(root.iter("failure")))
	if nfail:
	    bad.append("%d <failure> elements in the report" % nfail)
	for b in bad:
	    print("FAIL: provider-verbs.xml: " + b)
	print("provider-verbs.xml: %d listed (floor %d), %d passed, %d allowed skips, %d problems"
	      % (len(listed), floor, len(passed), len(skipped), len(bad)))
	sys.exit(1 if bad else 0)
EOF
log "PASS"
