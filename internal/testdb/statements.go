package testdb

import (
	"database/sql"
	"testing"
)

// CountStatements runs fn with db limited to one connection and returns
// how many statements the server ran on that connection meanwhile
// (MariaDB's and MySQL's session status Questions, less the reads of the
// status itself). Transaction statements (BEGIN, COMMIT) count, so a
// read in its own transaction counts three. Tests use it to check that an
// operation's cost does not grow with the rows or queues it reports on.
func CountStatements(t testing.TB, db *sql.DB, fn func()) int64 {
	t.Helper()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	questions := func() int64 {
		t.Helper()
		var name string
		var n int64
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Questions'").Scan(&name, &n); err != nil {
			t.Fatalf("read the session's statement count: %v", err)
		}
		return n
	}
	before := questions()
	fn()
	return questions() - before - 1
}
