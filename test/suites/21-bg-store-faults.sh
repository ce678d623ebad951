#!/usr/bin/env bash
#
# test/suites/21-bg-store-faults.sh: durable records of prepared transactions under faults: larger
# than the queue, unreadable, oversized, garbage, truncated, a full disk, a
# missing directory; every other record is still announced (issue 26).
# See test/notifier/background.py (store) for the checks.

# shellcheck source=test/notifier/background-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/background-suite.sh"
background store
