#!/usr/bin/env bash
#
# test/suites/17-notifier-restart.sh: prepared transactions decided after a clean restart and after a
# crash restart are announced to a listener that reconnected; rollbacks
# are not; more durable records than the queue holds; a corrupt record.
# See test/notifier/field.py (restart) for the checks.

# shellcheck source=test/notifier/field-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/field-suite.sh"
notifier_field restart
