// Package phpfixture loads the rows that Queuety PHP wrote to its tables in
// short scripted scenarios (testdata/queuety-php/*.json) and puts them into
// a MySQL or MariaDB database under a test's table prefix.
//
// A fixture file holds the PHP code of a scenario, notes on what to observe,
// a description of each handler, and snapshots of all sixteen
// wp_queuety_* tables taken after each step. Every column value is kept as
// the exact string the database returned (or nil for SQL NULL), so JSON
// columns keep PHP's json_encode bytes.
//
// Typical use in a test:
//
//	fx, err := phpfixture.Load("../testdata/queuety-php/c_three_step_workflow.json")
//	err = phpfixture.CreateSchema(db, prefix, "../testdata/queuety-php/schema.sql")
//	err = fx.Snapshot("dispatched").Insert(db, prefix)
package phpfixture

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/sqlstore"
)

// SourcePrefix is the table prefix Queuety PHP used when the fixtures were
// recorded. Table names in fixtures and in schema.sql start with it.
const SourcePrefix = "wp_"

// DBNowLayout is the layout of Snapshot.DBNow and of every DATETIME value
// in the fixtures.
const DBNowLayout = "2006-01-02 15:04:05"

// Row is one table row: column name to the stored value as a string, or
// nil for SQL NULL.
type Row map[string]*string

// Get returns the value of column col and whether it is non-NULL.
func (r Row) Get(col string) (string, bool) {
	v := r[col]
	if v == nil {
		return "", false
	}
	return *v, true
}

// Fixture is one scenario file.
type Fixture struct {
	Scenario       string            `json:"scenario"`
	PHP            string            `json:"php"`
	Notes          []string          `json:"notes"`
	Handlers       map[string]string `json:"handlers"`
	ServerTimeZone string            `json:"server_time_zone"`
	Source         map[string]string `json:"source"`
	Snapshots      []*Snapshot       `json:"snapshots"`
}

// Snapshot is the content of the tables at one point of a scenario.
type Snapshot struct {
	Label string `json:"label"`
	// SQL lists writes made outside Queuety before this step's PHP code
	// ran (moving a timestamp into the past instead of waiting).
	SQL []string `json:"sql"`
	// PHP is the code run for this step.
	PHP string `json:"php"`
	// Observed holds return values or handler calls worth recording.
	Observed map[string]json.RawMessage `json:"observed"`
	// DBNow is SELECT NOW() when the snapshot was taken (UTC).
	DBNow string `json:"db_now"`
	// Tables maps each table name (with the wp_ prefix) to its rows.
	Tables map[string][]Row `json:"tables"`
}

// Load reads and parses a fixture file.
func Load(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("phpfixture: %w", err)
	}
	var f Fixture
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("phpfixture: parse %s: %w", path, err)
	}
	if len(f.Snapshots) == 0 {
		return nil, fmt.Errorf("phpfixture: %s has no snapshots", path)
	}
	for i, s := range f.Snapshots {
		if _, err := time.Parse(DBNowLayout, s.DBNow); err != nil {
			return nil, fmt.Errorf("phpfixture: %s: snapshot %d (%q): db_now: %w", path, i, s.Label, err)
		}
	}
	return &f, nil
}

// Snapshot returns the snapshot with this label. When no label is equal,
// it returns the only snapshot whose label starts with label; otherwise nil.
func (f *Fixture) Snapshot(label string) *Snapshot {
	var match *Snapshot
	n := 0
	for _, s := range f.Snapshots {
		if s.Label == label {
			return s
		}
		if strings.HasPrefix(s.Label, label) {
			match = s
			n++
		}
	}
	if n == 1 {
		return match
	}
	return nil
}

// Now returns DBNow as a UTC time.
func (s *Snapshot) Now() time.Time {
	t, _ := time.ParseInLocation(DBNowLayout, s.DBNow, time.UTC)
	return t
}

// Rows returns the rows of a table, named without prefix
// ("queuety_jobs"), in the order PHP's SELECT returned them.
func (s *Snapshot) Rows(table string) []Row {
	return s.Tables[SourcePrefix+table]
}

// CreateSchema runs schema.sql (the CREATE TABLE statements Queuety PHP
// ran) with the wp_ prefix replaced by prefix, one statement at a time,
// so the tables are exactly those PHP creates.
func CreateSchema(db *sql.DB, prefix, schemaSQLPath string) error {
	data, err := os.ReadFile(schemaSQLPath)
	if err != nil {
		return fmt.Errorf("phpfixture: %w", err)
	}
	for _, stmt := range Statements(string(data), prefix) {
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("phpfixture: create schema: %.60s...: %w", stmt, err)
		}
	}
	return nil
}

// Statements splits schema.sql into its statements, drops the comment
// lines and replaces the table prefix: inside the statements, table names
// are the only place "`wp_" occurs.
func Statements(schemaSQL, prefix string) []string {
	return sqlstore.SplitStatements(strings.ReplaceAll(schemaSQL, "`"+SourcePrefix, "`"+prefix))
}

// Insert writes every row of the snapshot into the tables under prefix,
// in one transaction: explicit ids, values as strings (the server converts
// them to the column types) or NULL. Timestamps are loaded unchanged.
func (s *Snapshot) Insert(db *sql.DB, prefix string) error {
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("phpfixture: %w", err)
	}
	defer tx.Rollback()
	tables := make([]string, 0, len(s.Tables))
	for name := range s.Tables {
		tables = append(tables, name)
	}
	sort.Strings(tables)
	for _, name := range tables {
		if !strings.HasPrefix(name, SourcePrefix) {
			return fmt.Errorf("phpfixture: table %q does not start with %q", name, SourcePrefix)
		}
		table := prefix + strings.TrimPrefix(name, SourcePrefix)
		for _, row := range s.Tables[name] {
			cols := make([]string, 0, len(row))
			for c := range row {
				cols = append(cols, c)
			}
			sort.Strings(cols)
			quoted := make([]string, len(cols))
			args := make([]any, len(cols))
			for i, c := range cols {
				quoted[i] = "`" + c + "`"
				if v := row[c]; v != nil {
					args[i] = *v
				}
			}
			q := "INSERT INTO `" + table + "` (" + strings.Join(quoted, ", ") + ") VALUES (" +
				strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
			if _, err := tx.Exec(q, args...); err != nil {
				return fmt.Errorf("phpfixture: insert into %s: %w", table, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("phpfixture: %w", err)
	}
	return nil
}
