// Package migrated hands tests table prefixes whose tables the MySQL store
// has already migrated, cloned from a template (see testdb.Migrated), so a
// test does not pay for a migration from scratch. Opening a store on one
// finds every migration applied and changes nothing.
//
// It is a package of its own, not part of testdb, because it imports
// store/mysql, whose dependencies' tests may use testdb.
package migrated

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// DSN returns a go-sql-driver DSN for the test server with a fresh table
// prefix whose tables are migrated to store/mysql's latest schema, and
// drops those tables after the test. It skips (fails under CI=true) when
// the server is unreachable, like testdb.DSN.
func DSN(t testing.TB) (dsn, prefix string) {
	t.Helper()
	return testdb.Migrated(t, schema())
}

// DSNWith is DSN for tables named by the table-name DSN parameters params
// ("table_prefix=fleet_&table_jobs=jobrows"): the returned DSN carries
// them, and the tables are cloned from a template migrated with them.
func DSNWith(t testing.TB, params string) (dsn, prefix string) {
	t.Helper()
	schemasMu.Lock()
	s := schemas[params]
	if s == nil {
		s = &testdb.Schema{Key: key() + " " + params, Migrate: func(ctx context.Context, dsn string) error {
			return migrate(ctx, dsn+"&"+params)
		}}
		schemas[params] = s
	}
	schemasMu.Unlock()
	dsn, prefix = testdb.Migrated(t, s)
	return dsn + "&" + params, prefix
}

var (
	schemasMu sync.Mutex
	schemas   = map[string]*testdb.Schema{}
)

// schema is the template DSN clones: store/mysql's migrations, keyed by
// their latest version and a hash of their source.
var schema = sync.OnceValue(func() *testdb.Schema {
	return &testdb.Schema{Key: key(), Migrate: migrate}
})

func migrate(ctx context.Context, dsn string) error {
	s, err := driver.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Migrate(ctx)
}

// key names the schema the migrations produce: the latest version, and a
// hash of migrate.go and the SQL files of store/mysql, so a migration
// edited without a new version still gets a template of its own. When the
// source is not at hand (a binary built with -trimpath), the version alone
// names it.
func key() string {
	k := fmt.Sprintf("store/mysql v%d", mysql.LatestVersion)
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return k
	}
	dir := filepath.Join(filepath.Dir(self), "..", "..", "..", "store", "mysql")
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return k
	}
	files = append(files, filepath.Join(dir, "migrate.go"))
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return k
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%s %x", k, h.Sum(nil))
}
