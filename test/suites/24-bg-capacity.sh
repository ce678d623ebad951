#!/usr/bin/env bash
#
# test/suites/24-bg-capacity.sh: more databases than slots and background workers: no WARNING at
# start for databases with nothing scheduled, each database's work announced
# once a worker frees, one log line for the wait (issue 26).
# See test/notifier/background.py (capacity) for the checks.

# shellcheck source=test/notifier/background-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/background-suite.sh"
background capacity
