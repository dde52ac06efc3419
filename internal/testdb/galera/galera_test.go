//go:build galera

package galera_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/galera"
)

// TestClusterReplicatesAndRejoins starts a cluster, writes through one
// node and reads through another, SIGKILLs a node, writes while it is
// gone, and restarts it: it rejoins by incremental state transfer and
// holds the write it missed.
func TestClusterReplicatesAndRejoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := galera.Start(t)
	open := func(n *galera.Node) *sql.DB {
		db, err := sql.Open("mysql", n.DriverDSN(""))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db1, db2, db3 := open(c.Node(0)), open(c.Node(1)), open(c.Node(2))
	_, err := db1.ExecContext(ctx, "CREATE DATABASE harness")
	require.NoError(t, err)
	_, err = db1.ExecContext(ctx, "CREATE TABLE harness.t (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = db1.ExecContext(ctx, "INSERT INTO harness.t VALUES (1, 1)")
	require.NoError(t, err)
	// wsrep_sync_wait makes a read wait until the node has applied
	// every write the cluster committed before it.
	syncedConn := func(db *sql.DB) *sql.Conn {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		_, err = conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1")
		require.NoError(t, err)
		return conn
	}
	var v int
	require.NoError(t, syncedConn(db2).QueryRowContext(ctx, "SELECT v FROM harness.t WHERE id = 1").Scan(&v))
	require.Equal(t, 1, v)

	t0 := time.Now()
	c.Node(2).Kill()
	_, err = db1.ExecContext(ctx, "INSERT INTO harness.t VALUES (2, 2)")
	require.NoError(t, err)
	require.NoError(t, c.Node(2).Restart(ctx))
	t.Logf("node3 killed and rejoined in %s", time.Since(t0).Round(time.Millisecond))
	require.NoError(t, c.WaitSynced(ctx))
	require.NoError(t, syncedConn(db3).QueryRowContext(ctx, "SELECT v FROM harness.t WHERE id = 2").Scan(&v))
	require.Equal(t, 2, v)
}
