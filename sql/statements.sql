--
-- Every SQL statement a2's C code runs, as a2_statements() expands it for
-- this database (schema public): one block per statement, mode and the
-- oldest version of a2's objects the text serves.  A change to any
-- statement shows up here, in review, as a SQL diff.
--
-- Modes: single (one server), routed (distributed, through Citus), local
-- (distributed, no distributed table), shard (distributed, a pinned
-- session's shard tables; the shard ids shown are made up).
--

-- Each statement is named once per (mode, objects) and has a text for one
-- server or for distributed mode.
SELECT name, mode, objects, count(*)
  FROM a2_statements() GROUP BY 1, 2, 3 HAVING count(*) > 1;
SELECT count(DISTINCT name) AS statements,
       bool_and(sql LIKE '%public.%' OR sql LIKE '%pg_catalog.%') AS qualified,
       bool_and(sql NOT LIKE '%@extschema@%') AS expanded
  FROM a2_statements();
-- every mode is one of the four
SELECT DISTINCT split_part(mode, ' ', 1) AS mode FROM a2_statements() ORDER BY 1;

\pset format unaligned
\pset tuples_only on
SELECT format(E'-- %s [%s, objects %s]\n--   %s\n%s\n',
              name, mode, objects,
              CASE WHEN params = '' THEN '(no parameters)' ELSE params END,
              regexp_replace(regexp_replace(regexp_replace(sql, '\s+', ' ', 'g'),
                             '([^O]) UPDATE ', E'\\1\n  UPDATE ', 'g'),
                             ' (FROM|WHERE|AND|ORDER BY|GROUP BY|HAVING|LIMIT|UNION ALL|UNION|RETURNING|ON CONFLICT|VALUES|SET|JOIN|LEFT JOIN|CROSS JOIN|SELECT|INSERT INTO|DELETE FROM|\), [a-z_]+ AS) ',
                             E'\n  \\1 ', 'g'))
  FROM a2_statements()
 ORDER BY name,
          array_position(ARRAY['single', 'routed', 'local', 'shard'], split_part(mode, ' ', 1)),
          objects;
