#!/usr/bin/env bash
#
# test/suites/18-notifier-faults.sh: the notifier under faults: pg_cancel_backend (idle, and inside a
# sending transaction that waits), pg_terminate_backend, SIGHUP with a
# changed setting, a listener that never reads (A2_NOTIFY_FILL=1: PostgreSQL's
# notification queue filled to the brim, 8 GB), bad a2.notify_queue_size.
# See test/notifier/field.py (faults) for the checks.

# shellcheck source=test/notifier/field-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/field-suite.sh"
notifier_field faults
