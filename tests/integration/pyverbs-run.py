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
skip, xfail, xpass, or "missing" for a test that was loaded but reported
no outcome. Every loaded test has exactly one line: the outcomes of its
subtests (unittest's subTest) are folded into it, the worst one winning (a
failed subtest fails its test, where unittest's own text runner counts it
only in its closing tally); a class or module fixture's outcome (e.g. a
setUpClass that raises) gets a line of its own, named as unittest names it.
The counts the text runner prints at the end can hide a test behind
another's output; this file cannot.
"""

import fnmatch
import os
import re
import sys
import unittest
from importlib.machinery import SourceFileLoader


# Which outcome a test gets when its parts (the test, its subtests) differ.
WORST_FIRST = ("error", "fail", "xpass", "skip", "xfail", "pass")


class RecordingResult(unittest.TextTestResult):
    """A verbose text result that also keeps, per test, (outcome, reason)."""

    records = {}  # test id: [(outcome, reason)], in the order tests ran

    def _record(self, outcome, test, reason=""):
        reason = " ".join(str(reason).split())
        # a subtest's parts count for the test that holds it
        # (a skip's reason stays the message, matched whole by the caller)
        parent = getattr(test, "test_case", None)
        if parent is not None:
            if outcome != "skip":
                reason = f"subtest {test.id()[len(parent.id()):].strip()}: {reason}"
            test = parent
        self.records.setdefault(test.id(), []).append((outcome, reason))

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

    def addSubTest(self, test, subtest, err):
        # unittest reports a failed subtest here only: its test then gets
        # no addSuccess (nor addFailure), and would have no line at all
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record("fail" if failed else "error", subtest, err[1])

    @classmethod
    def outcome(cls, test_id):
        """(outcome, reason) of a test: its worst part's, "missing" if none."""
        parts = cls.records.get(test_id)
        if not parts:
            return "missing", "the test reported no outcome"
        worst = min(WORST_FIRST.index(o) for o, _ in parts)
        return WORST_FIRST[worst], " | ".join(r for o, r in parts if o == WORST_FIRST[worst])


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
    loaded = list(flatten(unittest.defaultTestLoader.loadTestsFromModule(tests)))
    for test in loaded:
        reason = next((r for p, r in excluded if fnmatch.fnmatchcase(test.id(), p)), None)
        if reason is None:
            run.addTest(test)
        else:
            RecordingResult.records[test.id()] = [("skip", reason)]
    runner.run(run)
    records = RecordingResult.records
    ids = list(dict.fromkeys(test.id() for test in loaded))
    # A setUpClass or setUpModule that raises is recorded under unittest's
    # name for it ("setUpClass (tests.mod.Class)"): its outcome is that of
    # each of its tests, which never ran. Other fixtures' outcomes (a
    # tearDownClass that raises) keep a line of their own.
    for name in [n for n in records if n not in ids]:
        m = re.fullmatch(r"(?:setUpClass|setUpModule) \((.+)\)", name)
        held = [i for i in ids if m and i.startswith(m.group(1) + ".") and i not in records]
        for i in held:
            records[i] = list(records[name])
        if held:
            del records[name]
    ids += [n for n in records if n not in ids]
    with open(report, "w", encoding="utf-8") as out:
        for test_id in ids:
            outcome, reason = RecordingResult.outcome(test_id)
            out.write(f"{outcome}\t{test_id}\t{reason}\n")


if __name__ == "__main__":
    main()
