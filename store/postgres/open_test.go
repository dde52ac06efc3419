package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/postgres"
)

func quiet() queuety.Option {
	return queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestOpenMissingDatabase: a DSN naming a database that does not exist
// fails with a hint, and create=true creates it, with the schema it
// names.
func TestOpenMissingDatabase(t *testing.T) {
	ctx := context.Background()
	admin := testdb.PostgresAdmin(t)
	name := fmt.Sprintf("queuety_create_%d", time.Now().UnixNano()%1e9)
	u, err := url.Parse(testdb.PostgresBaseDSN(t))
	require.NoError(t, err)
	u.Path = "/" + name
	base := u.String()
	_, err = queuety.Open(ctx, base, quiet())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist", "hint")
	assert.Contains(t, err.Error(), "create=true", "hint")
	c, err := queuety.Open(ctx, base+"?create=true&schema=jobs&prefix=t_", quiet())
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		_, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		assert.NoError(t, err, "drop the created database")
	})
	_, err = c.Dispatch(ctx, "h", nil)
	require.NoError(t, err, "the created database works")
	assert.Equal(t, "postgres", c.StoreInfo().Driver)
	assert.Equal(t, "t_", c.StoreInfo().Prefix)
	assert.Contains(t, c.StoreInfo().Address, "/"+name+"?schema=jobs")
}

// TestOpenMissingSchema: a schema that does not exist is an error with a
// hint, not tables created wherever the search_path leads.
func TestOpenMissingSchema(t *testing.T) {
	_, err := queuety.Open(context.Background(), testdb.PostgresBaseDSN(t)+"?schema=no_such_schema_q", quiet())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `schema "no_such_schema_q" does not exist`)
	assert.Contains(t, err.Error(), "create=true")
}

// TestTablesGoToTheSchemaWithThePrefix: the tables are created in the
// DSN's schema, named with its prefix.
func TestTablesGoToTheSchemaWithThePrefix(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testdb.PostgresDSN(t)
	c, err := queuety.Open(ctx, dsn+"&prefix=app_", quiet())
	require.NoError(t, err)
	defer c.Close()
	var n int
	require.NoError(t, testdb.PostgresAdmin(t).QueryRow(
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'app\\_queuety\\_%'", schema).Scan(&n))
	assert.Equal(t, 25, n, "Queuety's sixteen tables, the Go engine's eight, and the versions table")
}

// TestConcurrentMigrate: processes that open the same fresh schema at
// once all succeed; the advisory lock lets one migrate and the others
// find the version recorded.
func TestConcurrentMigrate(t *testing.T) {
	ctx := context.Background()
	dsn, _ := testdb.PostgresDSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			c, err := queuety.Open(ctx, dsn, quiet())
			if err == nil {
				c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "opener %d", i)
	}
	var versions int
	require.NoError(t, testdb.PostgresAdmin(t).QueryRow("SELECT COUNT(*) FROM "+strings.SplitN(dsn, "schema=", 2)[1]+".queuety_go_migrations").Scan(&versions))
	assert.Equal(t, postgres.LatestVersion, versions, "version rows: one per version")
}

// TestDeadlockIsRetried makes the server pick a deadlock victim: two
// transactions each lock one job, then the other's. The server rolls one
// back with SQLSTATE 40P01; InTx runs it again, and both commit (without
// the retry, the victim's error reaches the caller).
func TestDeadlockIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := testdb.PostgresDSN(t)
	c, err := queuety.Open(ctx, dsn, quiet())
	require.NoError(t, err)
	defer c.Close()
	ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "a"}, {Handler: "b"}})
	require.NoError(t, err)
	require.Len(t, ids, 2)

	var attempts atomic.Int32
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	lockInOrder := func(first, second int64) error {
		firstAttempt := true
		return clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			attempts.Add(1)
			if _, err := tx.JobGet(ctx, first, driver.LockUpdate); err != nil {
				return err
			}
			if firstAttempt {
				firstAttempt = false
				bothLocked.Done()
				bothLocked.Wait() // each now holds one lock and asks for the other's
			}
			_, err := tx.JobGet(ctx, second, driver.LockUpdate)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockInOrder(ids[0], ids[1]) }()
	go func() { errs <- lockInOrder(ids[1], ids[0]) }()
	for range 2 {
		require.NoError(t, <-errs, "transaction failed instead of being retried")
	}
	// At least one victim ran again. On a loaded server a second round
	// can happen (the victim's retry racing the survivor's granted lock):
	// more runs, still both committed.
	assert.GreaterOrEqual(t, attempts.Load(), int32(3), "transaction attempts (a deadlock victim run again)")
}

// TestDuplicateKeepsTheTransaction: a unique-key violation the store
// reports as driver.ErrDuplicate leaves the transaction usable (it ran
// under a savepoint), so what the transaction did before and after it
// commits. Without the savepoint PostgreSQL aborts the transaction at the
// failed statement.
func TestDuplicateKeepsTheTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := testdb.PostgresDSN(t)
	c, err := queuety.Open(ctx, dsn, quiet())
	require.NoError(t, err)
	defer c.Close()
	s := clientseam.StoreOf(c)
	now := time.Now().UTC()
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		return tx.LockInsert(ctx, &driver.Lock{Key: "k", Owner: "first", AcquiredAt: now})
	}))
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		if err := tx.LockInsert(ctx, &driver.Lock{Key: "before", Owner: "o", AcquiredAt: now}); err != nil {
			return err
		}
		err := tx.LockInsert(ctx, &driver.Lock{Key: "k", Owner: "second", AcquiredAt: now})
		if !errors.Is(err, driver.ErrDuplicate) {
			return fmt.Errorf("second insert of k: %v, want ErrDuplicate", err)
		}
		return tx.LockInsert(ctx, &driver.Lock{Key: "after", Owner: "o", AcquiredAt: now})
	}))
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		for key, owner := range map[string]string{"k": "first", "before": "o", "after": "o"} {
			l, err := tx.LockGet(ctx, key, driver.LockNone)
			if err != nil {
				return err
			}
			if l.Owner != owner {
				return fmt.Errorf("lock %s owned by %s, want %s", key, l.Owner, owner)
			}
		}
		return nil
	}))
}

// clientAndStore opens a client on a fresh database of the test server
// (the client migrates it) and a store of its own on the same database,
// for the statements a test runs by hand; both close when t ends.
func clientAndStore(ctx context.Context, t *testing.T) (*queuety.Client, driver.SQLStore) {
	t.Helper()
	dsn, _ := testdb.PostgresDSN(t)
	q, err := queuety.Open(ctx, dsn, quiet())
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return q, s.(driver.SQLStore)
}
