#!/usr/bin/env bash
#
# test/suites/23-bg-db-lifecycle.sh: scheduled work across the life of a database: CREATE
# DATABASE ... TEMPLATE, a failed DROP, RENAME, DROP, a pg_dump restore,
# ALTER EXTENSION UPDATE, DROP/CREATE EXTENSION in another schema, and a
# server restart (issue 26).
# See test/notifier/background.py (lifecycle) for the checks.

# shellcheck source=test/notifier/background-suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/../notifier/background-suite.sh"
background lifecycle
