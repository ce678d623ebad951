#!/usr/bin/env bash
#
# examples/clients/psql/run.sh: the cookbook's psql steps, as
# test/suites/86-cookbook.sh runs them (A2_URL, A2_LISTEN_URL, A2_RESTART
# as for the other programs).  The output, notification PIDs masked, must
# equal expected.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mask() { sed -E 's/server process with PID [0-9]+/server process with PID N/'; }

# psql writes errors to stderr (the script shows their SQLSTATE on stdout).
psql "$A2_URL" -X -q -f worker.sql
# [restart]
psql "$A2_LISTEN_URL" -X -q -v seen=0 -v id=order-1/packed -f listen.sql | mask
sh -c "$A2_RESTART" >&2
# After the restart: a new psql, LISTEN again, read from the last index seen.
psql "$A2_LISTEN_URL" -X -q -v seen=3 -v id=order-1/shipped -f listen.sql | mask
# [/restart]
echo 'done'
