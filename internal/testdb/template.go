package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Schema tells Migrated how to build the template that tests' tables are
// cloned from.
type Schema struct {
	// Key identifies the schema the migrations produce. Every test binary
	// whose Schema has the same Key shares one template, and the template
	// is kept between runs, so Key must change whenever the migrations do.
	Key string
	// Migrate migrates the empty table prefix named in dsn to the latest
	// schema, the way the store itself does.
	Migrate func(ctx context.Context, dsn string) error
}

// template is one migrated template prefix, as this test binary sees it.
type template struct {
	once   sync.Once
	prefix string   // the template's table prefix
	marker string   // a table that exists once the template is complete
	tables []string // table names without the prefix
	rows   []string // those of tables that hold rows (the applied versions)
	err    error
}

var (
	templatesMu sync.Mutex
	templates   = map[string]*template{}
)

// templateLockTimeout bounds the wait for another test binary that is
// migrating the same template.
const templateLockTimeout = 300

// templateMaxIdle is how long a template no test binary has used is kept
// before a binary that builds a new template drops it.
const templateMaxIdle = 24 * time.Hour

// Migrated returns a DSN with a fresh table prefix whose tables are already
// migrated to the schema s describes, and drops those tables after the
// test; opening a store on it finds every migration applied.
//
// The tables are cloned from a template prefix: the first call in a test
// binary migrates the template, unless another binary (of this run or an
// earlier one) already completed it under the same Key, and later calls
// copy it with CREATE TABLE ... LIKE, which keeps columns and indexes, and
// copy the rows of its non-empty tables (the record of applied
// migrations). Templates stay in place between runs; they are named
// tpl<hash of Key>_ and never match a test's own prefix.
func Migrated(t testing.TB, s *Schema) (dsn, prefix string) {
	t.Helper()
	db := Admin(t)
	tp := templateFor(s)
	tp.once.Do(func() { tp.err = tp.build(db, s) })
	if tp.err != nil {
		t.Fatalf("testdb: template %s: %v", tp.prefix, tp.err)
	}
	dsn, prefix = DSN(t)
	if err := tp.clone(db, prefix); err != nil {
		t.Fatalf("testdb: clone template %s: %v", tp.prefix, err)
	}
	return dsn, prefix
}

func templateFor(s *Schema) *template {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	tp := templates[s.Key]
	if tp == nil {
		sum := sha256.Sum256([]byte(s.Key))
		h := hex.EncodeToString(sum[:6])
		tp = &template{prefix: "tpl" + h + "_", marker: "tplready_" + h}
		templates[s.Key] = tp
	}
	return tp
}

// build makes sure the template is complete, migrating it when no test
// binary has, and reads its table list. GET_LOCK serialises test binaries
// that reach here at the same time; the marker table, created only after
// the migration succeeded, tells them the template is complete.
func (tp *template) build(db *sql.DB, s *Schema) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	release, err := getLock(ctx, conn, tp.prefix, templateLockTimeout)
	if err != nil {
		return err
	}
	defer release()

	ready, err := tableExists(ctx, conn, tp.marker)
	if err != nil {
		return err
	}
	if ready {
		if _, err := conn.ExecContext(ctx, "UPDATE `"+tp.marker+"` SET used_at = NOW()"); err != nil {
			return fmt.Errorf("mark used: %w", err)
		}
	} else {
		// Whatever is there is left from a build that did not finish.
		if err := DropTables(db, tp.prefix); err != nil {
			return err
		}
		if err := s.Migrate(ctx, dsnWithPrefix(tp.prefix)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "CREATE TABLE `"+tp.marker+"` (used_at DATETIME NOT NULL) ENGINE=InnoDB"); err != nil {
			return fmt.Errorf("mark complete: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO `"+tp.marker+"` (used_at) VALUES (NOW())"); err != nil {
			return fmt.Errorf("mark used: %w", err)
		}
		if err := pruneTemplates(ctx, conn, db, tp.marker); err != nil {
			return err
		}
	}

	names, err := Tables(db, tp.prefix)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("the migration created no table with prefix %s", tp.prefix)
	}
	for _, n := range names {
		tp.tables = append(tp.tables, strings.TrimPrefix(n, tp.prefix))
		var has bool
		if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM `"+n+"`)").Scan(&has); err != nil {
			return fmt.Errorf("read %s: %w", n, err)
		}
		if has {
			tp.rows = append(tp.rows, strings.TrimPrefix(n, tp.prefix))
		}
	}
	return nil
}

// clone creates the template's tables under prefix and copies the rows of
// those that have any.
func (tp *template) clone(db *sql.DB, prefix string) error {
	for _, n := range tp.tables {
		if _, err := db.Exec("CREATE TABLE `" + prefix + n + "` LIKE `" + tp.prefix + n + "`"); err != nil {
			return err
		}
	}
	for _, n := range tp.rows {
		if _, err := db.Exec("INSERT INTO `" + prefix + n + "` SELECT * FROM `" + tp.prefix + n + "`"); err != nil {
			return err
		}
	}
	return nil
}

// pruneTemplates drops the templates, other than keep's, that no test
// binary has used for templateMaxIdle: they belong to schemas the code has
// moved past. A template whose lock is held is in use and left alone.
func pruneTemplates(ctx context.Context, conn *sql.Conn, db *sql.DB, keep string) error {
	markers, err := Tables(db, "tplready_")
	if err != nil {
		return err
	}
	for _, m := range markers {
		if m == keep {
			continue
		}
		if err := pruneTemplate(ctx, conn, db, m); err != nil {
			return fmt.Errorf("prune %s: %w", m, err)
		}
	}
	return nil
}

func pruneTemplate(ctx context.Context, conn *sql.Conn, db *sql.DB, marker string) error {
	prefix := "tpl" + strings.TrimPrefix(marker, "tplready_") + "_"
	release, err := getLock(ctx, conn, prefix, 0)
	if err != nil {
		return nil // being built or read by another test binary
	}
	defer release()
	var idle bool
	err = conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(used_at), '1970-01-01') < NOW() - INTERVAL ? SECOND FROM `"+marker+"`",
		int(templateMaxIdle/time.Second)).Scan(&idle)
	if err != nil || !idle {
		return err
	}
	// The marker goes first: a template without it is rebuilt, never used.
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS `"+marker+"`"); err != nil {
		return err
	}
	return DropTables(db, prefix)
}

// getLock takes the named advisory lock of a template on conn, waiting up
// to timeout seconds, and returns its release.
func getLock(ctx context.Context, conn *sql.Conn, prefix string, timeout int) (func(), error) {
	name := "queuety_testdb_template:" + prefix
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, timeout).Scan(&got); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if got.Int64 != 1 {
		return nil, fmt.Errorf("lock %s: held by another session for %d s", name, timeout)
	}
	return func() { conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", name) }, nil
}

func tableExists(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", name, err)
	}
	return n > 0, nil
}
