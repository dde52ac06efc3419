// Package migrate is the schema migration runner the module's stores use,
// for stores written outside the module to reuse: a list of versioned
// steps, a versions table that records each step applied, steps applied in
// version order, and a lock that keeps concurrent migrators from applying
// a step twice.
//
// A store describes its schema history as Migrations and calls Apply from
// its driver.Store.Migrate. Apply reads the versions table first, so a
// database that is up to date is only read and never waits for the lock.
// Otherwise it takes the lock (Lock, such as MySQLLock, on one
// connection), creates the versions table when it is missing, and applies
// the steps the table does not list, in order, recording each. A step that
// fails stops the run: the steps before it stay applied and recorded, and
// the error (an *Error) names the failing step's version.
//
// Without a Lock, each step runs in its own transaction, together with the
// check that it is not recorded yet and its record; that is how SQLite
// serialises migrators (its write lock), and it suits any database whose
// DDL is transactional. With a Lock, steps run outside a transaction,
// since MySQL commits DDL implicitly, unless Transactional says the
// database's DDL is transactional (PostgreSQL, with PostgresLock).
//
// Every step's Up must be idempotent: it checks what exists before it
// changes anything (CREATE TABLE IF NOT EXISTS, a column looked up before
// it is added), so a step interrupted half way, before it was recorded,
// completes when run again.
//
// Statements use ? placeholders.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// Execer runs statements: a *sql.Conn or a *sql.Tx. A step's Up runs its
// statements on one.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Migration is one versioned schema change. Up must be idempotent: it
// checks what exists before it changes anything, so a migration
// interrupted half way, or racing another process, completes when run
// again.
type Migration struct {
	// Version orders the steps; each is applied once and recorded under
	// it. Versions are positive and increase along the list.
	Version int
	// Name says what the step changes; it is recorded with the version.
	Name string
	// Up applies the step.
	Up func(ctx context.Context, x Execer) error
}

// Statements returns an Up that runs the statements stmts returns, in
// order. An error names the statement that failed by its first 60
// characters.
func Statements(stmts func() []string) func(ctx context.Context, x Execer) error {
	return func(ctx context.Context, x Execer) error {
		for _, stmt := range stmts() {
			if _, err := x.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%.60s: %w", strings.TrimSpace(stmt), err)
			}
		}
		return nil
	}
}

// LockFunc serialises migrating processes on conn and returns the release.
type LockFunc func(ctx context.Context, conn *sql.Conn) (release func(), err error)

// Migrations is a store's schema history and how its database applies it.
type Migrations struct {
	// List holds the migrations in version order.
	List []Migration
	// Table is the name of the versions table, with columns version,
	// name and applied_at.
	Table string
	// VersionsTable is the DDL that creates the versions table when it is
	// missing; %s stands for its name. It must be a no-op when the table
	// exists (CREATE TABLE IF NOT EXISTS).
	VersionsTable string
	// Lock, when set, serialises migrating processes on one connection
	// (MySQLLock) and returns the release. Without it, each version runs in
	// its own transaction, which serialises writers on its own (SQLite's
	// immediate transactions).
	Lock LockFunc
	// Transactional runs each version in its own transaction even with a
	// Lock, for databases whose DDL is transactional (PostgreSQL): a step
	// that fails leaves nothing of itself behind.
	Transactional bool
	// AppliedAt encodes the time recorded in applied_at (default: the
	// time.Time itself, for drivers that encode it).
	AppliedAt func(time.Time) any
}

// Latest is the version the list migrates to (0 for an empty list).
func (m Migrations) Latest() int {
	if len(m.List) == 0 {
		return 0
	}
	return m.List[len(m.List)-1].Version
}

// Error reports the step a run stopped at. The steps before it stay
// applied and recorded; running again resumes at this one.
type Error struct {
	// Version and Name are the failing step's.
	Version int
	Name    string
	// Err is what the step (or recording it) returned.
	Err error
}

// Error returns "migrate: version V (name): cause".
func (e *Error) Error() string {
	return fmt.Sprintf("migrate: version %d (%s): %v", e.Version, e.Name, e.Err)
}

// Unwrap returns the step's error.
func (e *Error) Unwrap() error { return e.Err }

// Apply applies the versions the versions table does not list yet, in
// order, recording each. A database that has them all is only read, so a
// store opened on an up-to-date database never waits for the lock. A
// failing step stops the run with an *Error that names it.
func (m Migrations) Apply(ctx context.Context, db *sql.DB) error {
	if m.Table == "" {
		return errors.New("migrate: no versions table named")
	}
	var applied int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+m.Table+" WHERE version <= ?", m.Latest()).Scan(&applied)
	if err == nil && applied == len(m.List) {
		return nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if m.Lock != nil {
		release, err := m.Lock(ctx, conn)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer release()
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(m.VersionsTable, m.Table)); err != nil {
		return fmt.Errorf("migrate: create %s: %w", m.Table, err)
	}
	for _, mig := range m.List {
		if err := m.apply(ctx, conn, mig, m.Lock == nil || m.Transactional); err != nil {
			return &Error{Version: mig.Version, Name: mig.Name, Err: err}
		}
	}
	return nil
}

// apply runs one migration unless the versions table lists it, and
// records it, inside a transaction when inTx.
func (m Migrations) apply(ctx context.Context, conn *sql.Conn, mig Migration, inTx bool) error {
	var x Execer = conn
	var tx *sql.Tx
	if inTx {
		var err error
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		defer tx.Rollback()
		x = tx
	}
	var one int
	err := x.QueryRowContext(ctx, "SELECT 1 FROM "+m.Table+" WHERE version = ?", mig.Version).Scan(&one)
	switch {
	case err == nil:
		return nil // applied already
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if err := mig.Up(ctx, x); err != nil {
		return err
	}
	var at any = time.Now().UTC()
	if m.AppliedAt != nil {
		at = m.AppliedAt(time.Now().UTC())
	}
	if _, err := x.ExecContext(ctx, "INSERT INTO "+m.Table+" (version, name, applied_at) VALUES (?, ?, ?)",
		mig.Version, mig.Name, at); err != nil {
		return fmt.Errorf("record version: %w", err)
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}

// MySQLLock returns a Lock for MySQL and MariaDB: the named lock name
// (GET_LOCK), waited for up to wait, held by the migrating connection and
// released when the run ends. Use one name per schema, such as one per
// table prefix.
func MySQLLock(name string, wait time.Duration) LockFunc {
	return func(ctx context.Context, conn *sql.Conn) (func(), error) {
		secs := max(int(wait/time.Second), 0)
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, secs).Scan(&got); err != nil {
			return nil, fmt.Errorf("take lock: %w", err)
		}
		if got.Int64 != 1 {
			return nil, fmt.Errorf("another process held the migration lock for %d s", secs)
		}
		return func() { conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", name) }, nil
	}
}

// PostgresLock returns a Lock for PostgreSQL: a session advisory lock
// whose key is a hash of name, waited for up to wait, held by the
// migrating connection and released when the run ends. Use one name per
// set of tables, such as one per schema and table prefix. Its statements
// use ? placeholders, as Apply's do: conn must number them (the
// connections of store/postgres do).
func PostgresLock(name string, wait time.Duration) LockFunc {
	h := fnv.New64a()
	h.Write([]byte(name))
	key := int64(h.Sum64())
	return func(ctx context.Context, conn *sql.Conn) (func(), error) {
		deadline := time.Now().Add(wait)
		for {
			var got bool
			if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", key).Scan(&got); err != nil {
				return nil, fmt.Errorf("take lock: %w", err)
			}
			if got {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("another process held the migration lock for %s", wait)
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("take lock: %w", ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		return func() { conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", key) }, nil
	}
}
