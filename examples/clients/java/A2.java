// examples/clients/java/A2.java: a2 calls over JDBC (pgjdbc 42.5), each one
// statement on the Connection the caller passes, JSON through Jackson.
// Used by PlainWorker.java and HikariWorker.java (via Scenario.java); run by
// test/suites/86-cookbook.sh, quoted by docs/clients.md.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

final class A2 {
	static final ObjectMapper JSON = new ObjectMapper();

	private A2() {
	}

	// [json]
	// jsonb arguments: JSON text and ::jsonb in the SQL, so setString is
	// enough.  Without the cast, pgjdbc types the parameter varchar and no
	// function matches (42883 "function a2_append(character varying, ...)
	// does not exist"); setObject(i, json, Types.OTHER), a PGobject of type
	// jsonb, or stringtype=unspecified on the connection work too.  jsonb
	// results: getString, then parse.  Parameters for integer arguments
	// (attempt, max_failures) must be int, not long: bigint does not
	// convert to integer by itself (42883 again).
	static JsonNode append(Connection c, String sessionId, List<Map<String, Object>> events) throws SQLException {
		return call(c, "SELECT a2_append(?, ?::jsonb)", sessionId, json(events));
	}

	static JsonNode read(Connection c, String sessionId, long afterIndex) throws SQLException {
		return call(c, "SELECT a2_read(?, ?)", sessionId, afterIndex);
	}

	static JsonNode call(Connection c, String sql, Object... args) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++)
				ps.setObject(i + 1, args[i]);
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				return parse(rs.getString(1));
			}
		}
	}
	// [/json]

	// [transaction]
	// The handler's writes and a2_complete on one connection, in one
	// transaction: both commit or neither does.
	static JsonNode ship(Connection c, String sessionId, JsonNode ev, List<Map<String, Object>> children) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement("INSERT INTO shipments (order_id, sku, qty) VALUES (?, ?, ?)")) {
			for (JsonNode item : ev.get("payload").get("items")) {
				ps.setString(1, sessionId);
				ps.setString(2, item.get("sku").asText());
				ps.setInt(3, item.get("qty").asInt());
				ps.executeUpdate();
			}
		}
		return call(c, "SELECT a2_complete(?, ?, ?, ?::jsonb)", sessionId,
					ev.get("index").asLong(), ev.get("attemptCount").asInt(), json(children));
	}

	interface Work<T> {
		T apply(Connection c) throws SQLException;
	}

	static <T> T inTransaction(Connection c, Work<T> work) throws SQLException {
		c.setAutoCommit(false);
		try {
			T result = work.apply(c);
			c.commit();
			return result;
		} catch (SQLException | RuntimeException e) {
			if (!c.isClosed())
				c.rollback();
			throw e;
		} finally {
			if (!c.isClosed())
				c.setAutoCommit(true);
		}
	}
	// [/transaction]

	// [retry]
	// A connection the server closed fails with SQLSTATE class 08 (or 57P01
	// when the server says it is shutting down).  a2 calls are safe to
	// repeat: an append with ids replays, a completion of the same attempt
	// returns the stored children.  The caller's Db hands out a working
	// connection on the next try (a pool replaces broken ones; without a
	// pool, open a new one: a closed Connection stays closed, 08003).
	static boolean connectionLost(SQLException e) {
		String state = e.getSQLState();
		return state != null && (state.startsWith("08") || state.startsWith("57P0"));
	}

	static <T> T retrying(Db db, Work<T> work) throws SQLException, InterruptedException {
		for (int i = 1;; i++) {
			try {
				return db.run(work);
			} catch (SQLException e) {
				if (i >= 120 || !connectionLost(e))
					throw e;
				System.err.println("retrying after: " + e.getSQLState() + " " + e.getMessage());
				Thread.sleep(250);
			}
		}
	}
	// [/retry]

	/** How a program gets a working connection: see PlainWorker, HikariWorker. */
	interface Db {
		<T> T run(Work<T> work) throws SQLException;
	}

	static String json(Object value) {
		try {
			return JSON.writeValueAsString(value);
		} catch (java.io.IOException e) {
			throw new IllegalArgumentException(e);
		}
	}

	static JsonNode parse(String text) {
		try {
			return JSON.readTree(text);
		} catch (java.io.IOException e) {
			throw new IllegalStateException(e);
		}
	}
}
