#!/usr/bin/env bash
#
# test/suites/75-list-collation.sh: a2_list_sessions under a linguistic
# collation, where ids with a common prefix are not adjacent in session-id
# order (ICU en-US with alternate=shifted ignores punctuation: "a-b" < "ab"
# < "a-c").  The walk must then visit every session after the cursor, not
# stop at the first id past the prefix: every page is checked against the
# exact answer.  The bytewise (C) path is covered by sql/inspect.sql.
# Database a2_list_icu, dropped at the end.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

db=a2_list_icu
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $db" \
	-c "CREATE DATABASE $db LOCALE_PROVIDER icu ICU_LOCALE 'en-US-u-ka-shifted' TEMPLATE template0"
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" || true' EXIT

out=$(psql -X -At -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION a2;
SELECT count(*) FROM unnest(ARRAY['a-b', 'ab', 'a-c', 'aa', 'a-', 'b', 'a', 'a-d', 'a-a-', 'a_x']) s,
	LATERAL a2_append(s, '[{"type": "t"}]');
-- the collation really interleaves them: an id without the prefix sorts
-- between two with it
SELECT 'interleaved ' || EXISTS (
	SELECT 1 FROM a2_events o
	 WHERE NOT starts_with(o.session_id, 'a-')
	   AND o.session_id > (SELECT min(session_id) FROM a2_events WHERE starts_with(session_id, 'a-'))
	   AND o.session_id < (SELECT max(session_id) FROM a2_events WHERE starts_with(session_id, 'a-')));
-- one page, and pages of 1 and 2 walked to the end
SELECT 'page ' || jsonb_path_query_array(a2_list_sessions('a-'), '$.sessions[*].sessionId')::text;
WITH RECURSIVE pages(size, n, cur, ids) AS (
	SELECT s, 1, p ->> 'cursor', jsonb_path_query_array(p, '$.sessions[*].sessionId')
	  FROM unnest(ARRAY[1, 2]) s, LATERAL a2_list_sessions('a-', NULL, s) p
	UNION ALL
	SELECT size, n + 1, p ->> 'cursor', jsonb_path_query_array(p, '$.sessions[*].sessionId')
	  FROM pages, LATERAL a2_list_sessions('a-', pages.cur, pages.size) p
	 WHERE pages.cur IS NOT NULL)
SELECT 'walk ' || size || ' ' || (SELECT string_agg(x, ',' ORDER BY n, o)
								   FROM pages q, jsonb_array_elements_text(q.ids) WITH ORDINALITY AS t(x, o)
								  WHERE q.size = p.size)
  FROM pages p GROUP BY size ORDER BY size;
-- the exact answer, in the same collation
SELECT 'expected ' || string_agg(session_id, ',' ORDER BY session_id)
  FROM (SELECT DISTINCT session_id FROM a2_events WHERE starts_with(session_id, 'a-')) x;
SQL
)
printf '%s\n' "$out"

expected=$(sed -n 's/^expected //p' <<<"$out")
fail=0
grep -qx 'interleaved true' <<<"$out" || {
	a2_warn "list-collation: the collation does not interleave the ids; the test proves nothing"
	fail=1
}
[[ $(sed -n 's/^page //p' <<<"$out") == "[\"${expected//,/\", \"}\"]" ]] || {
	a2_warn "list-collation: one page differs from the expected ids ($expected)"
	fail=1
}
for size in 1 2; do
	[[ $(sed -n "s/^walk $size //p" <<<"$out") == "$expected" ]] || {
		a2_warn "list-collation: pages of $size differ from the expected ids ($expected)"
		fail=1
	}
done
[[ $fail -eq 0 ]] || exit 1
a2_log "list-collation: passed"
