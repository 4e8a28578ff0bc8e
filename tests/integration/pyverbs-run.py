#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run rdma-core's pyverbs test suite and record every test's outcome.

Usage: pyverbs-run.py SUITE_DIR REPORT [--exclude PATTERN=REASON]... [suite arguments...]

SUITE_DIR is an unpacked copy of /usr/share/doc/rdma-core/tests (its
parent directory holds it as "tests"); the suite arguments are those of its
run_tests.py (--dev, --port, --gid). A test whose id matches an excluded
PATTERN (fnmatch, e.g. tests.test_flow.*) is not run but recorded as a
skip for REASON, so the caller judges it like any other skip. REPORT gets
one line per test:
"outcome<TAB>test id<TAB>reason", outcome being one of pass, fail, error,
skip, xfail, xpass. The counts the text runner prints at the end can hide a
test behind another's output; this file cannot.
"""

import fnmatch
import os
import sys
import unittest
from importlib.machinery import SourceFileLoader


class RecordingResult(unittest.TextTestResult):
    """A verbose text result that also keeps (outcome, test, reason)."""

    records = []

    def _record(self, outcome, test, reason=""):
        reason = " ".join(str(reason).split())
        self.records.append((outcome, test.id(), reason))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record("pass", test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record("fail", test, err[1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record("error", test, err[1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record("skip", test, reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record("xfail", test, err[1])

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record("xpass", test)


def flatten(suite):
    """The test cases of a (nested) suite."""
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from flatten(test)
        else:
            yield test


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    suite_dir, report = os.path.abspath(sys.argv[1]), sys.argv[2]
    args, excluded = sys.argv[3:], []
    while len(args) >= 2 and args[0] == "--exclude":
        excluded.append(args[1].partition("=")[::2])
        args = args[2:]
    # The suite imports its helpers as top-level modules and parses (and
    # removes) its own arguments from sys.argv, as its run_tests.py does.
    sys.path.insert(0, suite_dir)
    sys.path.insert(0, os.path.dirname(suite_dir))
    sys.argv = [sys.argv[0]] + args
    from args_parser import parser  # pylint: disable=import-outside-toplevel
    tests = SourceFileLoader("tests", os.path.join(suite_dir, "__init__.py")).load_module()
    parser.parse_args()
    runner = unittest.TextTestRunner(verbosity=2, resultclass=RecordingResult)
    run = unittest.TestSuite()
    for test in flatten(unittest.defaultTestLoader.loadTestsFromModule(tests)):
        reason = next((r for p, r in excluded if fnmatch.fnmatchcase(test.id(), p)), None)
        if reason is None:
            run.addTest(test)
        else:
            RecordingResult.records.append(("skip", test.id(), reason))
    runner.run(run)
    with open(report, "w", encoding="utf-8") as out:
        for outcome, test_id, reason in RecordingResult.records:
            out.write(f"{outcome}\t{test_id}\t{reason}\n")


if __name__ == "__main__":
    main()
