package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/migrate"
)

// hotStore is a Store on a fresh SQLite file with one table t (id, v),
// keeping hot statements prepared when prepare is set.
func hotStore(t *testing.T, prepare bool) *Store {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "hot.db")+"?_txlock=immediate")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	_, err = db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL DEFAULT 0)")
	require.NoError(t, err)
	d := Dialect{
		Name:       "sqlite",
		Retryable:  func(error) bool { return false },
		Duplicate:  func(error) bool { return false },
		Time:       func(t time.Time, _ bool) any { return t.UTC().Format(time.DateTime) },
		Begin:      func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		PrepareHot: prepare,
	}
	s := New(db, d, "", driver.StoreInfo{Driver: "sqlite"}, migrate.Migrations{})
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHotStatementsArePreparedBeforeTheNextTransaction: a hot statement
// first runs unprepared, is prepared before the store's next transaction
// and then runs prepared, with the same effect each time; padded id
// lists change exactly the rows they name.
func TestHotStatementsArePreparedBeforeTheNextTransaction(t *testing.T) {
	ctx := context.Background()
	s := hotStore(t, true)
	_, err := s.DB.Exec("INSERT INTO t (id) VALUES (1), (2), (3), (4), (5), (6)")
	require.NoError(t, err)
	bump := func(ids ...int64) int64 {
		var n int64
		require.NoError(t, s.InTx(ctx, func(dtx driver.Tx) error {
			tx := dtx.(*txn)
			in, args := tx.inIDs(ids)
			res, err := tx.execHot(ctx, "UPDATE t SET v = v + 1 WHERE id IN ("+in+")", args...)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		}))
		return n
	}
	q := "UPDATE t SET v = v + 1 WHERE id IN (?,?,?,?)"
	assert.Equal(t, int64(3), bump(1, 2, 3), "three ids padded to four change three rows")
	assert.Nil(t, s.stmts.stmts[q], "not prepared inside the transaction that met it")
	assert.Equal(t, int64(3), bump(4, 5, 6), "second run")
	assert.NotNil(t, s.stmts.stmts[q], "prepared before the next transaction")
	assert.Equal(t, int64(4), bump(1, 2, 3, 4), "four ids, the same statement")
	var sum int64
	require.NoError(t, s.DB.QueryRow("SELECT SUM(v) FROM t").Scan(&sum))
	assert.Equal(t, int64(10), sum, "each named row changed once per run")
}

// TestHotShapes: ids are padded and rows split to powers of two only on a
// store that keeps statements prepared.
func TestHotShapes(t *testing.T) {
	hot := &txn{s: hotStore(t, true)}
	plain := &txn{s: hotStore(t, false)}
	in, args := hot.inIDs([]int64{7, 8, 9, 10, 11})
	assert.Equal(t, "?,?,?,?,?,?,?,?", in)
	assert.Equal(t, []any{int64(7), int64(8), int64(9), int64(10), int64(11), int64(11), int64(11), int64(11)}, args)
	in, args = hot.inIDs([]int64{7})
	assert.Equal(t, "?", in)
	assert.Len(t, args, 1)
	in, args = plain.inIDs([]int64{7, 8, 9})
	assert.Equal(t, "?,?,?", in)
	assert.Len(t, args, 3)

	assert.Equal(t, []int{128, 64, 8}, hot.chunks(200))
	assert.Equal(t, []int{128, 128, 1}, hot.chunks(257))
	assert.Equal(t, []int{4, 2, 1}, hot.chunks(7))
	assert.Equal(t, []int{200}, plain.chunks(200))
	assert.Equal(t, []int{500, 500, 201}, plain.chunks(1201), "at most maxInsertRows rows a statement")
	assert.Equal(t, "(?,?),(?,?),(?,?)", rowsSQL(3, 2))
}
