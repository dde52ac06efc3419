package driver

import "database/sql"

// SQLStore is implemented by stores built on database/sql (store/mysql
// and store/sqlite). It lets an application share the store's connection
// pool and enqueue work inside its own transactions.
type SQLStore interface {
	Store
	// SQLDB returns the store's connection pool. Closing it closes the
	// store.
	SQLDB() *sql.DB
	// WrapTx returns the store's row operations running on tx, a
	// transaction the caller began on the same database (through SQLDB,
	// or its own handle on the same database and driver). The operations
	// use tx's connection and never begin, commit or roll back: the
	// caller does. Times are sent as UTC text, so the caller's session
	// time zone and driver location do not change what is stored.
	WrapTx(tx *sql.Tx) Tx
}
