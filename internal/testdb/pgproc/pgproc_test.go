package pgproc

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TestCrashRestart: a row committed before a crash (immediate shutdown)
// is there after the restart.
func TestCrashRestart(t *testing.T) {
	s := Start(t, Options{})
	ctx := context.Background()
	db, err := sql.Open("pgx", s.DriverDSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	s.Crash()
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("the server answered after the crash")
	}
	if err := s.Restart(time.Minute); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("rows after the restart: %d", n)
	}
}
