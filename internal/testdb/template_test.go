package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSchema migrates two tables, one holding a version row, and counts
// its migrations.
func fakeSchema(t *testing.T, db *sql.DB) (*Schema, *atomic.Int32) {
	t.Helper()
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	var runs atomic.Int32
	s := &Schema{Key: "testdb test " + hex.EncodeToString(b), Migrate: func(ctx context.Context, dsn string) error {
		runs.Add(1)
		prefix := dsn[strings.LastIndex(dsn, "prefix=")+len("prefix="):]
		for _, stmt := range []string{
			"CREATE TABLE `" + prefix + "items` (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT NULL, KEY idx_name (name))",
			"CREATE TABLE `" + prefix + "versions` (version INT NOT NULL PRIMARY KEY)",
			"INSERT INTO `" + prefix + "versions` VALUES (1), (2)",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}}
	tp := templateFor(s)
	t.Cleanup(func() {
		_, err := db.Exec("DROP TABLE IF EXISTS `" + tp.marker + "`")
		assert.NoError(t, err, "drop the template marker %s", tp.marker)
		Drop(t, db, tp.prefix)
	})
	return s, &runs
}

func TestMigratedClonesTemplate(t *testing.T) {
	db := Admin(t)
	s, runs := fakeSchema(t, db)
	tp := templateFor(s)

	var first string
	t.Run("first", func(t *testing.T) {
		_, first = Migrated(t, s)
		names, err := Tables(db, first)
		require.NoError(t, err)
		require.Equal(t, []string{first + "items", first + "versions"}, names, "tables of the clone")
		var versions int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM `"+first+"versions`").Scan(&versions))
		assert.Equal(t, 2, versions, "version rows copied")
		var ddl string
		require.NoError(t, db.QueryRow("SHOW CREATE TABLE `"+first+"items`").Scan(new(string), &ddl))
		assert.Contains(t, ddl, "idx_name", "clone lost the index")
		assert.Contains(t, ddl, "AUTO_INCREMENT", "clone lost the auto-increment")
	})
	names, err := Tables(db, first)
	assert.NoError(t, err, "clone tables after the test")
	assert.Empty(t, names, "clone tables left after the test")
	names, err = Tables(db, tp.prefix)
	assert.NoError(t, err, "template tables after a test")
	assert.Len(t, names, 2, "template tables after a test: want both kept")
	t.Run("second", func(t *testing.T) {
		_, p := Migrated(t, s)
		assert.NotEqual(t, first, p, "prefix handed out twice")
	})
	assert.Equal(t, int32(1), runs.Load(), "times migrated")

	// Another test binary finds the template complete and reuses it.
	delete(templates, s.Key)
	t.Run("reuse", func(t *testing.T) { Migrated(t, s) })
	assert.Equal(t, int32(1), runs.Load(), "times migrated after the template was complete")
}

func TestMigratedRebuildsIncompleteTemplate(t *testing.T) {
	db := Admin(t)
	s, runs := fakeSchema(t, db)
	tp := templateFor(s)
	// A build that died after creating a table, before the marker.
	_, err := db.Exec("CREATE TABLE `" + tp.prefix + "items` (id INT)")
	require.NoError(t, err)
	_, prefix := Migrated(t, s)
	assert.Equal(t, int32(1), runs.Load(), "times migrated")
	var cols int
	err = db.QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", prefix+"items").Scan(&cols)
	require.NoError(t, err)
	assert.Equal(t, 2, cols, "columns of the clone of the rebuilt template")
}

func TestBuildPrunesIdleTemplates(t *testing.T) {
	db := Admin(t)
	idle, _ := fakeSchema(t, db)
	recent, _ := fakeSchema(t, db)
	t.Run("build", func(t *testing.T) {
		Migrated(t, idle)
		Migrated(t, recent)
	})
	_, err := db.Exec("UPDATE `" + templateFor(idle).marker + "` SET used_at = NOW() - INTERVAL 2 DAY")
	require.NoError(t, err)
	fresh, _ := fakeSchema(t, db)
	t.Run("build another", func(t *testing.T) { Migrated(t, fresh) })
	for _, c := range []struct {
		s    *Schema
		kept bool
	}{{idle, false}, {recent, true}, {fresh, true}} {
		tp := templateFor(c.s)
		names, err := Tables(db, tp.prefix)
		require.NoError(t, err)
		marked, err := tableExists(context.Background(), mustConn(t, db), tp.marker)
		require.NoError(t, err)
		if c.kept {
			assert.Len(t, names, 2, "tables of kept template %s", tp.prefix)
			assert.True(t, marked, "marker of kept template %s", tp.prefix)
		} else {
			assert.Empty(t, names, "tables of pruned template %s", tp.prefix)
			assert.False(t, marked, "marker of pruned template %s", tp.prefix)
		}
	}
}

func mustConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}
