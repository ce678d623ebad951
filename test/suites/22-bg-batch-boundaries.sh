#!/usr/bin/env bash
#
# test/suites/22-bg-batch-boundaries.sh: the scheduler's batch boundaries: ties of 10,000, 10,001
# and 20,001 events; a backoff committed after its retry time; an event due
# while its transaction was prepared (issue 26).
# See test/notifier/background.py (batch) for the checks.

# shellcheck source=test/notifier/background-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/background-suite.sh"
background batch
