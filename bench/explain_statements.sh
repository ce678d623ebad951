#!/usr/bin/env bash
#
# bench/explain_statements.sh DB [SETTING ...] -- the generic plan of every
# single-mode a2 statement (the text for the newest objects), as
# PostgreSQL would make it now in database DB: each text from
# a2_statements() is PREPAREd with its declared parameter types and
# EXPLAINed (COSTS OFF) under plan_cache_mode = force_generic_plan, after
# SET of each SETTING (e.g. enable_seqscan=off).  Used for issue 30 to
# compare the plans of a new, empty database with those of a table in use
# (bench/RESULTS.md, "Issue 30").  These PREPAREd statements are the
# caller's, not a2's kept plans, so a2's planner hooks leave them alone.
#
# Uses psql from PATH and the libpq environment (PGHOST, PGPORT, ...).

set -euo pipefail
db=$1
shift
gen=$(psql -X -A -t -d "$db" <<'SQL'
WITH s AS (
  SELECT DISTINCT ON (name) name, params, sql
    FROM a2_statements() WHERE mode = 'single'
   ORDER BY name, objects DESC)
SELECT format(E'\\echo ==== %s\nPREPARE p%s%s AS %s;\nEXPLAIN (COSTS OFF) EXECUTE p%s%s;\nDEALLOCATE p%s;',
   name, row_number() OVER (ORDER BY name),
   coalesce('(' || (SELECT string_agg(regexp_replace(p, '^\$\d+ \S+ ', ''), ', ' ORDER BY ord)
               FROM regexp_split_to_table(params, ', (?=\$)') WITH ORDINALITY AS t(p, ord) WHERE params <> '') || ')', ''),
   sql, row_number() OVER (ORDER BY name),
   coalesce('(' || (SELECT string_agg('NULL', ', ') FROM regexp_split_to_table(params, ', (?=\$)') p WHERE params <> '') || ')', ''),
   row_number() OVER (ORDER BY name))
  FROM s ORDER BY name;
SQL
)
{ echo "SET plan_cache_mode = force_generic_plan;"; for s in "$@"; do echo "SET $s;"; done; echo "$gen"; } | psql -X -q -d "$db" 2>&1
