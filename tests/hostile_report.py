#!/usr/bin/env python3
"""Counts the hostile-input cases by outcome (clean, unclear, accepted, clobbered, memory, hang,
crash), for the attn binary built with the tests or for another one.

    tests/hostile_report.py build/tests/attn_tests [OTHER_ATTN_BINARY]

Runs the whole test binary with gtest's JSON output and reads the "hostile_outcome" property
that tests/hostile_util.h records for every case that calls expect_clean_failure. With
OTHER_ATTN_BINARY (an older build, say), the same cases run against that binary instead.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

ORDER = ["clean", "unclear", "accepted", "clobbered", "memory", "hang", "crash"]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    env = dict(os.environ)
    if len(sys.argv) == 3:
        env["ATTN_TEST_BINARY"] = os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        subprocess.run([sys.argv[1], f"--gtest_output=json:{report}"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        with open(report) as f:
            suites = json.load(f)["testsuites"]
    by_outcome = collections.defaultdict(list)
    for suite in suites:
        for test in suite["testsuite"]:
            if "hostile_outcome" in test:
                by_outcome[test["hostile_outcome"]].append(f'{suite["name"]}.{test["name"]}')
    total = sum(len(cases) for cases in by_outcome.values())
    print(f"{total} hostile cases: " +
          ", ".join(f"{outcome} {len(by_outcome[outcome])}" for outcome in ORDER))
    for outcome in ORDER[1:]:
        for case in by_outcome[outcome]:
            print(f"  {outcome}: {case}")


if __name__ == "__main__":
    main()
