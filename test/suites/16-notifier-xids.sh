#!/usr/bin/env bash
#
# test/suites/16-notifier-xids.sh: long uptime: transaction ids near and past 2^31 and 2^32, prepared
# transactions in flight across both, across restarts and a crash; the
# worker's RecentXmin made 2^31 stale (gdb); an entry whose clog is gone.
# See test/notifier/field.py (xids) for the checks.

# shellcheck source=test/notifier/field-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/field-suite.sh"
notifier_field xids
