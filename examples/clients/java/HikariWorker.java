// examples/clients/java/HikariWorker.java: the cookbook's worker on pgjdbc
// with a HikariCP pool.
//
//   A2_JDBC_URL=jdbc:postgresql://...  A2_JDBC_LISTEN_URL=jdbc:postgresql://...
//   A2_PGBOUNCER=0|1  A2_RESTART='...'  java -cp ...:HikariCP.jar HikariWorker
//
// Debian 12: libhikaricp-java (2.7), libslf4j-java, libpostgresql-jdbc-java.
// Run by test/suites/86-cookbook.sh direct and through pgbouncer.

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;

public final class HikariWorker {
	private HikariWorker() {
	}

	public static void main(String[] args) throws Exception {
		boolean behindPgbouncer = "1".equals(System.getenv("A2_PGBOUNCER"));
		// [hikari]
		// HikariCP checks a connection that sat idle before handing it out
		// and replaces the ones the server closed.  Through pgbouncer in
		// transaction mode: prepareThreshold=0 (see PlainWorker.java).
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(System.getenv("A2_JDBC_URL"));
		config.setMaximumPoolSize(8);
		if (behindPgbouncer)
			config.addDataSourceProperty("prepareThreshold", "0");
		HikariDataSource pool = new HikariDataSource(config);

		A2.Db db = new A2.Db() {
			@Override
			public <T> T run(A2.Work<T> work) throws SQLException {
				try (Connection c = pool.getConnection()) {		/* close() gives it back */
					return work.apply(c);
				}
			}
		};
		// [/hikari]
		try {
			Scenario.run(db);
		} finally {
			pool.close();
		}
	}
}
