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
python3 - "$xml" "${!allowed_skips[@]}" <<-'EOF' || fail "GoogleTest report $xml"
	import sys
	import xml.etree.ElementTree as ET
	root = ET.parse(sys.argv[1]).getroot()
	allowed = set(sys.argv[2:])
	bad = []
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
	for case in cases:
	    name = "%s.%s" % (case.get("classname"), case.get("name"))
	    if case.find("failure") is not None or case.find("error") is not None:
	        bad.append("%s failed" % name)
	    if (case.get("result") == "skipped" or case.get("status") == "notrun"
	            or case.find("skipped") is not None) and name not in allowed:
	        bad.append("%s was skipped, and is not an allowed skip" % name)
	nfail = len(list(root.iter("failure")))
	if nfail:
	    bad.append("%d <failure> elements in the report" % nfail)
	for b in bad:
	    print("FAIL: provider-verbs.xml: " + b)
	print("provider-verbs.xml: %d testcases checked, %d problems" % (len(cases), len(bad)))
	sys.exit(1 if bad else 0)
EOF
log "PASS"
