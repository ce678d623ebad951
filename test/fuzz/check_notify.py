#!/usr/bin/env python3
"""
check_notify.py -- compare the NOTIFYs a fuzz run received with those it
should have received.

    python3 test/fuzz/check_notify.py RUN_OUTPUT EXPECTED_B64 [SCHEDULED_B64]

RUN_OUTPUT is what `psql -At` printed while running `LISTEN a2_events` and
`SELECT a2_fuzz.run(first, last)` per chunk: a line "chunk <first>" for each
committed chunk, followed by the notifications psql received after it.
EXPECTED_B64 is a2_fuzz.expected_notifications() in base64 (psql's result
printing drops some characters, U+10FFFF among them; its notification
printing does not): for each chunk, the [session, greatest new index] pairs
of the calls that added events.

SPEC 4: every committed transaction that added events to a session sends one
NOTIFY a2_events {"sessionId", "index": greatest new index} per session.  So
each chunk must have delivered exactly the expected pairs: a notification
for a session whose calls all failed (rolled back in their subtransactions)
is a leaked write, a missing one a lost wake-up.  Exit status 1 on mismatch.

SCHEDULED_B64, when given, lists the [session, index] of every stored event
with a notBefore (a2_fuzz.scheduled_events()).  With the notifier preloaded
a2's scheduler announces such an event when it falls due by the wall clock,
and once more when a scheduler (re)starts (SPEC 7.1: duplicates allowed), at
a moment the cases do not control.  An unexpected notification naming one
of them is counted as a due announcement, not a mismatch; one naming any
other pair (a rolled-back index, a session without new events) still is.
The schedule sessions (fz:sch:*) are allowed in any chunk.
"""

import base64
import json
import re
import sys

# The sessions the cases' schedules append to (gen_cases.py SCHED_SESSIONS):
# only a2_fire_schedules cases append there, to up to all of them at once,
# so their announcements are allowed in any chunk rather than listed.
SCHEDULE_SESSION_PREFIX = 'fz:sch:'

NOTE = re.compile(r'^Asynchronous notification "a2_events" with payload "(.*)" '
                  r'received from server process with PID [0-9]+\.$')


def main():
    run_output, expected_file = sys.argv[1], sys.argv[2]
    with open(expected_file, 'rb') as f:
        expected_json = base64.b64decode(f.read()).decode('utf-8')
    expected = {int(k): sorted((s, i) for s, i in v) for k, v in json.loads(expected_json).items()}
    scheduled = set()
    if len(sys.argv) > 3:
        with open(sys.argv[3], 'rb') as f:
            scheduled = {(s, i) for s, i in json.loads(base64.b64decode(f.read()).decode('utf-8'))}

    received = {}
    chunk = None
    problems = []
    # split on \n only: payloads may hold U+2028, which splitlines() breaks on
    with open(run_output, encoding='utf-8', newline='') as f:
        for line in f.read().split('\n'):
            if line.startswith('chunk '):
                chunk = int(line.split()[1])
                received.setdefault(chunk, [])
                continue
            m = NOTE.match(line)
            if m:
                try:
                    payload = json.loads(m.group(1))
                    pair = (payload['sessionId'], payload['index'])
                    if set(payload) != {'sessionId', 'index'}:
                        problems.append('payload keys %s' % sorted(payload))
                except (ValueError, KeyError, TypeError) as e:
                    problems.append('unparsable payload %r: %s' % (m.group(1)[:200], e))
                    continue
                if chunk is None:
                    problems.append('notification before the first chunk: %r' % (pair,))
                else:
                    received[chunk].append(pair)

    total = 0
    due = 0
    fired = 0
    for first in sorted(set(expected) | set(received)):
        unmatched = list(expected.get(first, []))
        got = sorted(received.get(first, []))
        total += len(got)
        extra = []
        for p in got:
            if p in unmatched:
                unmatched.remove(p)     # each expected pair once
            elif p in scheduled:
                due += 1
            elif p[0].startswith(SCHEDULE_SESSION_PREFIX):
                fired += 1
            else:
                extra.append(p)
        if unmatched or extra:
            problems.append('chunk %d: missing %s; unexpected %s' % (
                first, [(s[:60], i) for s, i in unmatched][:5], [(s[:60], i) for s, i in extra][:5]))
    print('fuzz: %d notifications received in %d chunks, %d expected, %d due announcements of scheduled events, '
          '%d of schedule sessions' % (total, len(received), sum(len(v) for v in expected.values()), due, fired))
    for p in problems[:20]:
        print('fuzz: NOTIFY mismatch: ' + p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
