package sqlstore

import (
	"database/sql"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// SQLDB implements driver.SQLStore: the store's connection pool.
func (s *Store) SQLDB() *sql.DB { return s.DB }

// WrapTx implements driver.SQLStore: the row operations on a transaction
// the caller began and will commit or roll back. The statements are the
// store's own (same prefix, same dialect); only times are sent as UTC text
// ("2006-01-02 15:04:05[.000000]"), which MySQL, MariaDB and SQLite all
// read into their datetime columns, so a caller's connection with another
// time zone or driver location stores the same values as the store's own.
func (s *Store) WrapTx(tx *sql.Tx) driver.Tx {
	ext := *s
	ext.D.Time = utcText
	ext.stmts = nil // the caller's transaction may belong to another *sql.DB
	return &txn{s: &ext, tx: tx}
}

// utcText formats a time as UTC text for a datetime column.
func utcText(t time.Time, frac bool) any {
	if frac {
		return t.UTC().Format("2006-01-02 15:04:05.000000")
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

var _ driver.SQLStore = (*Store)(nil)
