import Testing

@testable import VPNProvAccounts

/// Which connection failures `vpnprov accounts` waits out as a failover of the accounts cluster (it tries again every
/// second) instead of failing at once: libpq 15's messages (fe-connect.c, fe-misc.c, fe-secure-openssl.c), as
/// `DatabaseConnection` reports them (newlines made "; ").
@Suite struct DatabaseFailoverMessageTests {
    @Test(arguments: [
        // every host down, or the only writable one gone
        "connection to server at \"198.18.56.11\", port 5432 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?",
        "connection to server at \"198.18.56.12\", port 5432 failed: session is read-only",
        "connection to server at \"198.18.56.11\", port 5432 failed: timeout expired",
        "connection to server at \"198.18.56.11\", port 5432 failed: FATAL:  the database system is starting up",
        // the old primary accepted the connection and its server died while it was being made (seen when its
        // keeper restarted PostgreSQL and the monitor demoted it at once)
        "connection to server at \"198.18.56.11\", port 5432 failed: server closed the connection unexpectedly; This probably means the server terminated abnormally; before or while processing the request.",
        "SSL connection has been closed unexpectedly",
    ])
    func aFailoverIsWaitedOut(_ message: String) {
        #expect(DatabaseConnection.isFailover(message))
    }

    @Test(arguments: [
        "connection to server at \"198.18.56.11\", port 5432 failed: FATAL:  password authentication failed for user \"vpnprov\"",
        "connection to server at \"198.18.56.11\", port 5432 failed: FATAL:  database \"accounts\" does not exist",
        "could not translate host name \"db.example\" to address: Name or service not known",
    ])
    func anythingElseFailsAtOnce(_ message: String) {
        #expect(!DatabaseConnection.isFailover(message))
    }
}
