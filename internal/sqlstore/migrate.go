package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Execer runs statements: a *sql.Conn or a *sql.Tx. Migrations run their
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
	Version int
	Name    string
	Up      func(ctx context.Context, x Execer) error
}

// RunStatements returns an Up that runs the statements stmts returns, in
// order.
func RunStatements(stmts func() []string) func(ctx context.Context, x Execer) error {
	return func(ctx context.Context, x Execer) error {
		for _, stmt := range stmts() {
			if _, err := x.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%.60s: %w", strings.TrimSpace(stmt), err)
			}
		}
		return nil
	}
}

// Migrations is a store's schema history and how its dialect applies it.
type Migrations struct {
	// List holds the migrations in version order.
	List []Migration
	// VersionsTable is the DDL that creates the versions table when it is
	// missing; %s stands for its name.
	VersionsTable string
	// Lock, when set, serialises migrating processes on conn (MySQL's
	// GET_LOCK) and returns the release. Without it, each version runs in
	// its own transaction, which serialises writers on its own (SQLite's
	// immediate transactions).
	Lock func(ctx context.Context, conn *sql.Conn) (release func(), err error)
}

// Latest is the version the list migrates to.
func (m Migrations) Latest() int {
	if len(m.List) == 0 {
		return 0
	}
	return m.List[len(m.List)-1].Version
}

// migrate applies the versions the versions table does not list yet, in
// order, recording each. A schema that has them all is only read, so a
// store opened on an up-to-date database never waits for a lock.
func (s *Store) migrate(ctx context.Context) error {
	m := s.migrations
	table := s.T.Migrations
	var applied int
	err := s.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE version <= ?", m.Latest()).Scan(&applied)
	if err == nil && applied == len(m.List) {
		return nil
	}
	conn, err := s.DB.Conn(ctx)
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
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(m.VersionsTable, table)); err != nil {
		return fmt.Errorf("migrate: create %s: %w", table, err)
	}
	for _, mig := range m.List {
		if err := s.apply(ctx, conn, mig, m.Lock == nil); err != nil {
			return fmt.Errorf("migrate: version %d (%s): %w", mig.Version, mig.Name, err)
		}
	}
	return nil
}

// apply runs one migration unless the versions table lists it, and
// records it, inside a transaction when inTx.
func (s *Store) apply(ctx context.Context, conn *sql.Conn, mig Migration, inTx bool) error {
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
	err := x.QueryRowContext(ctx, "SELECT 1 FROM "+s.T.Migrations+" WHERE version = ?", mig.Version).Scan(&one)
	switch {
	case err == nil:
		return nil // applied already
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if err := mig.Up(ctx, x); err != nil {
		return err
	}
	if _, err := x.ExecContext(ctx, "INSERT INTO "+s.T.Migrations+" (version, name, applied_at) VALUES (?, ?, ?)",
		mig.Version, mig.Name, s.D.Time(time.Now().UTC(), true)); err != nil {
		return fmt.Errorf("record version: %w", err)
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}
