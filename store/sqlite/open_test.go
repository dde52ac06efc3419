package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/queuety/queuety-go/queuety"
)

// TestOpenMigratedDatabaseWhileAnotherWrites opens a database that is
// already migrated while another connection holds its write lock, as when
// a worker starts next to busy ones. Opening must not wait for the lock.
func TestOpenMigratedDatabaseWhileAnotherWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	first, err := queuety.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	writer, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	conn, err := writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	// A short busy timeout: opening fails at once if it asks for the lock.
	second, err := queuety.Open(ctx, "sqlite://"+path+"?busy_timeout=200")
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer second.Close()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Dispatch(ctx, "after_open", nil); err != nil {
		t.Fatalf("write once the other connection is done: %v", err)
	}
}
