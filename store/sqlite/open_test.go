package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
)

// TestOpenMigratedDatabaseWhileAnotherWrites opens a database that is
// already migrated while another connection holds its write lock, as when
// a worker starts next to busy ones. Opening must not wait for the lock.
func TestOpenMigratedDatabaseWhileAnotherWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	first, err := queuety.Open(ctx, "sqlite://"+path)
	require.NoError(t, err)
	defer first.Close()

	writer, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer writer.Close()
	conn, err := writer.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)

	// A short busy timeout: opening fails at once if it asks for the lock.
	second, err := queuety.Open(ctx, "sqlite://"+path+"?busy_timeout=200")
	require.NoError(t, err, "open while another connection writes")
	defer second.Close()
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	_, err = second.Dispatch(ctx, "after_open", nil)
	require.NoError(t, err, "write once the other connection is done")
}
