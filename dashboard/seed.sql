-- Extra demo data for the dashboard (scripts/dashboard.sh with no URL runs
-- it after examples/quickstart.sql): 40 sessions of shop orders, some
-- finished, some waiting, some scheduled, some dead-lettered with one of
-- three errors, so every page has something to show.
\set ON_ERROR_STOP 1
DO $$
DECLARE
	i int;
	s text;
	e jsonb;
	errs text[] := ARRAY['card declined', 'timeout talking to the warehouse', 'address not found'];
BEGIN
	FOR i IN 1..40 LOOP
		s := pg_catalog.format('shop-%s', pg_catalog.lpad(i::text, 3, '0'));
		PERFORM a2_append(s, pg_catalog.jsonb_build_array(
			pg_catalog.jsonb_build_object('type', 'order.placed', 'lane', 'orders',
				'payload', pg_catalog.jsonb_build_object('order', i, 'sku', 'SKU-' || (i % 7), 'qty', 1 + i % 3)),
			pg_catalog.jsonb_build_object('type', 'email.receipt',
				'payload', pg_catalog.jsonb_build_object('to', 'customer' || i || '@example.com'))));
		IF i % 10 = 0 THEN
			PERFORM a2_append(s, pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
				'type', 'reminder', 'notBefore', (pg_catalog.now() + interval '1 day')::text)));
		END IF;
		CONTINUE WHEN i % 4 = 0;	-- left waiting: backlog
		FOR e IN SELECT x FROM pg_catalog.jsonb_array_elements(a2_claim(s, 'seed-worker', 60000) -> 'events') x LOOP
			IF i % 3 = 0 THEN	-- dead-lettered at once (max_failures 1)
				PERFORM a2_fail(s, (e ->> 'index')::bigint, (e ->> 'attemptCount')::int, errs[1 + (i / 3) % 3], 1);
			ELSE
				PERFORM a2_complete(s, (e ->> 'index')::bigint, (e ->> 'attemptCount')::int, '[]');
			END IF;
		END LOOP;
	END LOOP;
END
$$;
