#!/usr/bin/env bash
#
# test/suites/75-citus.sh: distributed mode on a 3-node Citus cluster
# (test/citus/run.sh).  Prints "skipped: citus is not installed" and passes
# where Citus is missing, as in CI.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
exec "$root/test/citus/run.sh"
