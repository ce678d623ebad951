// examples/clients/java/Scenario.java: the cookbook's worker steps over JDBC,
// printing the transcript in ../expected.txt.  PlainWorker and HikariWorker
// differ only in how they get a connection (an A2.Db).

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

final class Scenario {
	private Scenario() {
	}

	static void check(boolean ok, String what) {
		if (!ok)
			throw new IllegalStateException("check failed: " + what);
	}

	static final class HandlerFailed extends RuntimeException {
		private static final long serialVersionUID = 1L;

		HandlerFailed() {
			super("handler failed");
		}
	}

	static long count(A2.Db db, String pattern) throws SQLException {
		return db.run(c -> {
			try (var ps = c.prepareStatement("SELECT count(*) FROM shipments WHERE order_id LIKE ?")) {
				ps.setString(1, pattern);
				try (var rs = ps.executeQuery()) {
					rs.next();
					return rs.getLong(1);
				}
			}
		});
	}

	static JsonNode claim(A2.Db db, String sessionId, String holder, long ttlMs) throws SQLException {
		return db.run(c -> A2.call(c, "SELECT a2_claim(?, ?, ?)", sessionId, holder, ttlMs));
	}

	static JsonNode complete(A2.Db db, String sessionId, long index, int attempt) throws SQLException {
		return db.run(c -> A2.call(c, "SELECT a2_complete(?, ?, ?)", sessionId, index, attempt));
	}

	static List<Map<String, Object>> settled(String id, String type) {
		return List.of(Map.of("id", id, "type", type, "settled", true));
	}

	static void run(A2.Db db) throws Exception {
		// 1. JSON in and out.
		Map<String, Object> payload = Map.of(
			"items", List.of(Map.of("sku", "tea", "qty", 2), Map.of("sku", "cups", "qty", 6)),
			"note", "thé ☕ — 東京");
		List<Map<String, Object>> order = List.of(Map.of(
			"id", "order-1/placed", "type", "order.placed", "lane", "payments", "payload", payload));
		JsonNode appended = db.run(c -> A2.append(c, "order-1", order));
		System.out.println("append: order-1 index " + appended.get("events").get(0).get("index")
						   + ", hasPending " + appended.get("hasPending"));
		JsonNode stored = db.run(c -> A2.read(c, "order-1", 0)).get(0);
		check(stored.get("payload").equals(A2.JSON.valueToTree(payload)), "payload round trip");
		System.out.println("read: payload round trip, note \"" + stored.get("payload").get("note").asText()
						   + "\", " + stored.get("payload").get("items").size() + " items");

		// 2. Errors carry their SQLSTATE.
		// [errors]
		try {
			db.run(c -> A2.call(c, "SELECT a2_append(?, ?::jsonb)", "order-1", "{\"not\": \"an array\"}"));
		} catch (SQLException e) {
			var server = ((org.postgresql.util.PSQLException) e).getServerErrorMessage();
			System.out.println("error: " + e.getSQLState() + " " + server.getMessage());
		}
		// [/errors]

		// 3. Claim, then complete inside the app's transaction.
		JsonNode claim = claim(db, "order-1", "worker-1", 30000);
		JsonNode ev = claim.get("events").get(0);
		System.out.println("claim: " + claim.get("outcome").asText() + " [" + ev.get("index") + "] attempt "
						   + ev.get("attemptCount"));
		List<Map<String, Object>> paid = List.of(Map.of(
			"id", "order-1/paid", "type", "payment.captured", "payload", Map.of("amount", 7.5)));
		try {
			db.run(c -> A2.inTransaction(c, tx -> {
				A2.ship(tx, "order-1", ev, paid);
				throw new HandlerFailed();
			}));
		} catch (HandlerFailed expected) {
			// all of it rolled back
		}
		boolean unprocessed = db.run(c -> A2.read(c, "order-1", 0)).get(0).get("processedAt").isNull();
		System.out.println("rollback: shipments " + count(db, "order-1") + ", event 1 "
						   + (unprocessed ? "unprocessed" : "processed"));
		JsonNode done = db.run(c -> A2.inTransaction(c, tx -> A2.ship(tx, "order-1", ev, paid)));
		System.out.println("complete: " + done.get("outcome").asText() + ", child index "
						   + done.get("events").get(0).get("index") + ", shipments " + count(db, "order-1"));

		// 4. Stale work, both ways.
		claim(db, "order-1", "worker-1", 0);
		check(claim(db, "order-1", "worker-2", 30000).get("events").get(0).get("attemptCount").asInt() == 2,
			  "second attempt");
		JsonNode late = complete(db, "order-1", 2, 1);
		String fenced = "";
		try {
			db.run(c -> A2.append(c, "order-1", List.of(Map.of(
				"type", "refund.requested", "cause", Map.of("index", 2, "attempt", 1)))));
		} catch (SQLException e) {
			if (!"Z2002".equals(e.getSQLState()))
				throw e;
			fenced = e.getSQLState();
		}
		System.out.println("stale: complete " + late.get("outcome").asText() + ", caused append " + fenced);
		check(complete(db, "order-1", 2, 2).get("outcome").asText().equals("completed"), "complete attempt 2");

		// 5. LISTEN and catch up.
		Follower follower = new Follower(System.getenv("A2_JDBC_LISTEN_URL"), List.of("order-1"));
		follower.await(() -> follower.lastSeen.get("order-1") >= 2);
		db.run(c -> A2.append(c, "order-1", settled("order-1/packed", "order.packed")));
		follower.await(() -> follower.lastSeen.get("order-1") >= 3);
		System.out.println("listen: caught up to 2, heard " + follower.lastSeen.get("order-1"));

		// 6. A server restart.
		check(new ProcessBuilder("sh", "-c", System.getenv("A2_RESTART")).inheritIO().start().waitFor() == 0,
			  "restart");
		JsonNode shipped = A2.retrying(db, c -> A2.append(c, "order-1", settled("order-1/shipped", "order.shipped")));
		follower.await(() -> follower.lastSeen.get("order-1") >= 4);
		System.out.println("restart: appended " + shipped.get("events").get(0).get("index")
						   + ", listener caught up to " + follower.lastSeen.get("order-1"));
		follower.await(() -> follower.listens() >= 2);
		A2.retrying(db, c -> A2.append(c, "order-1", settled("order-1/delivered", "order.delivered")));
		follower.await(() -> follower.lastSeen.get("order-1") >= 5);
		System.out.println("restart: listener heard " + follower.lastSeen.get("order-1"));

		// 7. A burst: 8 worker threads at once, 5 orders each.
		ExecutorService pool = Executors.newFixedThreadPool(8);
		List<Future<?>> workers = new ArrayList<>();
		for (int w = 0; w < 8; w++) {
			final int worker = w;
			workers.add(pool.submit(() -> {
				for (int i = 0; i < 5; i++) {
					String sessionId = "burst-" + worker + "-" + i;
					db.run(c -> A2.append(c, sessionId, List.of(Map.of(
						"id", sessionId + "/placed", "type", "order.placed",
						"payload", Map.of("items", List.of(Map.of("sku", "tea", "qty", 1)))))));
					JsonNode ev1 = claim(db, sessionId, "worker-" + worker, 30000).get("events").get(0);
					JsonNode r = db.run(c -> A2.inTransaction(c, tx -> A2.ship(tx, sessionId, ev1, List.of())));
					check(r.get("outcome").asText().equals("completed"), sessionId);
				}
				return null;
			}));
		}
		for (Future<?> f : workers)
			f.get();
		pool.shutdown();
		System.out.println("burst: " + count(db, "burst-%") + " orders shipped by 8 workers");
		System.out.println("done");
	}
}
