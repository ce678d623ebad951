// examples/clients/java/Follower.java: follow a2 sessions over JDBC with
// LISTEN a2_events plus catch-up, reconnecting after a server restart.

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

// [follow]
// LISTEN on a direct connection of its own (through pgbouncer in
// transaction mode the LISTEN stays on a server connection other clients
// then use), polled by a thread with getNotifications(timeout).  After
// every (re)connect: LISTEN, then read what was missed.  pgjdbc keeps
// notifications that arrive during other statements on the connection for
// the next getNotifications, so catch-up reads can use it too.
final class Follower {
	final Map<String, Long> lastSeen = new ConcurrentHashMap<>();
	private int listens;			/* guarded by this */

	Follower(String url, List<String> sessionIds) {
		for (String s : sessionIds)
			lastSeen.put(s, 0L);
		Thread t = new Thread(() -> run(url), "a2-follower");
		t.setDaemon(true);
		t.start();
	}

	private void catchUp(Connection c, String sessionId) throws SQLException {
		JsonNode events = A2.read(c, sessionId, lastSeen.get(sessionId));
		synchronized (this) {
			if (events.size() > 0)
				lastSeen.put(sessionId, events.get(events.size() - 1).get("index").asLong());
			notifyAll();
		}
	}

	private void run(String url) {
		long delayMs = 100;
		while (true) {
			try (Connection c = DriverManager.getConnection(url)) {
				try (Statement s = c.createStatement()) {
					s.execute("LISTEN a2_events");
				}
				for (String s : lastSeen.keySet())
					catchUp(c, s);
				synchronized (this) {
					listens++;
					notifyAll();
				}
				delayMs = 100;
				PGConnection pg = c.unwrap(PGConnection.class);
				while (true) {
					for (PGNotification n : pg.getNotifications(1000)) {	/* throws once the connection is lost */
						JsonNode p = A2.parse(n.getParameter());	/* {"sessionId", "index"} */
						String sessionId = p.get("sessionId").asText();
						Long seen = lastSeen.get(sessionId);
						if (seen != null && p.get("index").asLong() > seen)
							catchUp(c, sessionId);
					}
				}
			} catch (SQLException e) {
				try {
					Thread.sleep(delayMs);
				} catch (InterruptedException ie) {
					return;
				}
				delayMs = Math.min(delayMs * 2, 2000);
			}
		}
	}
	// [/follow]

	synchronized int listens() {
		return listens;
	}

	/** Waits until the condition holds (harness). */
	synchronized void await(BooleanSupplier condition) throws InterruptedException {
		long end = System.currentTimeMillis() + 15000;
		while (!condition.getAsBoolean()) {
			long left = end - System.currentTimeMillis();
			if (left <= 0)
				throw new IllegalStateException("check failed: the follower did not get there");
			wait(left);
		}
	}
}
