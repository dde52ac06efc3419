package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "modernc.org/sqlite"

	"github.com/queuety/queuety-go/store/migrate"
)

// A store's schema history: two versions, applied in order and recorded in
// a versions table. A second Apply finds both recorded and changes
// nothing. On MySQL or MariaDB, set Lock: migrate.MySQLLock(...) so
// concurrent migrators wait for each other.
func ExampleMigrations_Apply() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:example?mode=memory")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database

	m := migrate.Migrations{
		List: []migrate.Migration{
			{Version: 1, Name: "notes table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"}
			})},
			{Version: 2, Name: "notes by body", Up: migrate.Statements(func() []string {
				return []string{"CREATE INDEX IF NOT EXISTS notes_body ON notes (body)"}
			})},
		},
		Table:         "schema_versions",
		VersionsTable: "CREATE TABLE IF NOT EXISTS %s (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
		AppliedAt:     func(t time.Time) any { return t.Format(time.RFC3339) },
	}
	for range 2 {
		if err := m.Apply(ctx, db); err != nil {
			panic(err)
		}
	}
	rows, _ := db.Query("SELECT version, name FROM schema_versions ORDER BY version")
	defer rows.Close()
	for rows.Next() {
		var v int
		var name string
		_ = rows.Scan(&v, &name)
		fmt.Println(v, name)
	}
	fmt.Println("latest:", m.Latest())
	// Output:
	// 1 notes table
	// 2 notes by body
	// latest: 2
}
