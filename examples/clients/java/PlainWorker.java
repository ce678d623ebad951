// examples/clients/java/PlainWorker.java: the cookbook's worker on plain
// pgjdbc (DriverManager, one connection per thread, no pool).
//
//   A2_JDBC_URL=jdbc:postgresql://...  A2_JDBC_LISTEN_URL=jdbc:postgresql://...
//   A2_PGBOUNCER=0|1  A2_RESTART='...'  java -cp ...:postgresql.jar PlainWorker
//
// Debian 12: libpostgresql-jdbc-java (42.5), libjackson2-databind-java.
// Run by test/suites/86-cookbook.sh direct and through pgbouncer.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

public final class PlainWorker {
	private PlainWorker() {
	}

	// [connect]
	// Through pgbouncer in transaction mode: prepareThreshold=0.  pgjdbc
	// otherwise switches a statement it ran 5 times (by default) to a named
	// server-side one, which the next server connection lacks ("prepared
	// statement "S_8" does not exist", 26000, also inside a transaction).
	// pgbouncer must ignore the extra_float_digits pgjdbc sends at startup
	// (ignore_startup_parameters = extra_float_digits).
	static String url(String base, boolean behindPgbouncer) {
		return behindPgbouncer ? base + (base.contains("?") ? "&" : "?") + "prepareThreshold=0" : base;
	}
	// [/connect]

	// [plain]
	// Without a pool, a Connection the server closed stays closed (08003
	// "This connection has been closed"): check and reopen it before use.
	private static final ThreadLocal<Connection> CONNECTION = new ThreadLocal<>();

	static Connection connection(String url) throws SQLException {
		Connection c = CONNECTION.get();
		if (c == null || c.isClosed()) {
			c = DriverManager.getConnection(url);
			CONNECTION.set(c);
		}
		return c;
	}
	// [/plain]

	public static void main(String[] args) throws Exception {
		String url = url(System.getenv("A2_JDBC_URL"), "1".equals(System.getenv("A2_PGBOUNCER")));
		Scenario.run(new A2.Db() {
			@Override
			public <T> T run(A2.Work<T> work) throws SQLException {
				return work.apply(connection(url));
			}
		});
	}
}
