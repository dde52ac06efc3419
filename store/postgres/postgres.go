// Package postgres is the queuety store for PostgreSQL 12 and newer, for
// Go applications that run on PostgreSQL. Queuety PHP is MySQL-only, so
// this store serves fleets of Go workers alone; its tables have Queuety's
// names, columns and values (in PostgreSQL's types), so the UI, the CLI,
// the metrics and the test kit work on it unchanged.
//
// Import it for its side effect, then open a DSN:
//
//	import _ "github.com/queuety/queuety-go/store/postgres"
//
//	q, err := queuety.Open(ctx, "postgres://user:pass@127.0.0.1:5432/app?schema=jobs")
//
// The DSN is a URL, postgres:// or postgresql://,
//
//	postgres://[user[:password]@][host[:port]]/database[?parameters]
//
// whose user information ends at the last '@', so a password may hold
// '@', ':', '/', '?' and '#' as they are or percent-encoded (an '@' in the
// parameters must be written %40). No host means 127.0.0.1, no port 5432.
// Parameters: prefix (table prefix, default none, ^[A-Za-z0-9_]{0,32}$),
// schema (the schema the tables live in, set as the session's
// search_path; default the server's search_path), create=true (create
// the database, and the schema when one is named, if missing),
// max_open_conns (default 32), and the connection settings sslmode,
// sslrootcert, sslcert, sslkey, connect_timeout and application_name,
// passed to pgx. Any other parameter is an error, and errors never show
// the DSN's password.
//
// Every session runs with time zone UTC and READ COMMITTED isolation;
// claims lock their rows with FOR UPDATE SKIP LOCKED. A process that
// commits jobs sends a notification (NOTIFY) on a channel named after the
// schema and prefix, and idle workers of every process listen on it
// (LISTEN, on a connection of their own), so a job dispatched in one
// process starts at once in another; polling stays the fallback. A transaction that
// meets a deadlock (40P01), a serialization failure (40001) or a lock
// timeout (55P03) is run again from its start.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	d := driver.NewDriver(ParseDSN, OpenConfig)
	driver.Register("postgres", d)
	driver.Register("postgresql", d)
}

// Config is a parsed DSN.
type Config struct {
	// User and Password are the DSN's, percent-decoded.
	User, Password string
	Host           string // host name or IP address, without brackets
	Port           int
	Database       string // the database, which create=true creates
	// Prefix is the table prefix; Schema, when set, the schema the
	// tables are in (the session's search_path).
	Prefix, Schema string
	// Create creates the database (and the schema) when missing.
	Create       bool
	MaxOpenConns int
	// Params are the connection settings passed to pgx (sslmode, ...).
	Params map[string]string
}

// connParams are the DSN parameters passed through to pgx.
var connParams = []string{"sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout", "application_name"}

var schemaRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ParseDSN parses a postgres:// or postgresql:// DSN. Its errors never
// hold the DSN's password.
func ParseDSN(dsn string) (*Config, error) {
	c, err := parseDSN(dsn)
	if err != nil {
		return nil, driver.RedactError(err, dsn)
	}
	return c, nil
}

func parseDSN(dsn string) (*Config, error) {
	lower := strings.ToLower(dsn)
	var rest string
	switch {
	case strings.HasPrefix(lower, "postgres://"):
		rest = dsn[len("postgres://"):]
	case strings.HasPrefix(lower, "postgresql://"):
		rest = dsn[len("postgresql://"):]
	default:
		return nil, fmt.Errorf("%w: a PostgreSQL DSN starts with postgres:// or postgresql://", driver.ErrInvalidArgument)
	}
	c := &Config{Port: 5432, MaxOpenConns: 32, Params: map[string]string{}}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, pass, _ := strings.Cut(rest[:at], ":")
		c.User, c.Password = unescapeLenient(user), unescapeLenient(pass)
		rest = rest[at+1:]
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return nil, fmt.Errorf("%w: a postgres:// DSN has no #fragment (write a '#' in the database name or a parameter as %%23)", driver.ErrInvalidArgument)
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hostport, path, _ := strings.Cut(rest, "/")
	var err error
	if c.Host, c.Port, err = splitHostPort(hostport); err != nil {
		return nil, err
	}
	if c.Database, err = url.PathUnescape(path); err != nil {
		return nil, fmt.Errorf("%w: the DSN's database name has a '%%' that starts no escape (write it as %%25)", driver.ErrInvalidArgument)
	}
	if c.Database == "" {
		return nil, fmt.Errorf("%w: DSN names no database (postgres://user@host:5432/database)", driver.ErrInvalidArgument)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: DSN parameters: %v", driver.ErrInvalidArgument, err)
	}
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, fmt.Errorf("%w: DSN parameter %s is given %d times", driver.ErrInvalidArgument, shown(k), len(vs))
		}
		v := vs[0]
		switch k {
		case "prefix":
			c.Prefix = v
		case "schema":
			if !schemaRE.MatchString(v) {
				return nil, fmt.Errorf("%w: schema %s must match ^[A-Za-z_][A-Za-z0-9_]{0,62}$", driver.ErrInvalidArgument, shown(v))
			}
			c.Schema = v
		case "create":
			if c.Create, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("%w: create must be true or false, got %s", driver.ErrInvalidArgument, shown(v))
			}
		case "max_open_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%w: max_open_conns must be a positive integer", driver.ErrInvalidArgument)
			}
			c.MaxOpenConns = n
		default:
			if strings.HasPrefix(k, "table_") {
				return nil, fmt.Errorf("%w: DSN parameter %s: table names can be changed on the MySQL store only, whose tables Queuety PHP shares (use prefix or schema)", driver.ErrInvalidArgument, shown(k))
			}
			known := false
			for _, p := range connParams {
				known = known || k == p
			}
			if !known {
				return nil, fmt.Errorf("%w: unknown postgres DSN parameter %s (known: prefix, schema, create, max_open_conns, %s)",
					driver.ErrInvalidArgument, shown(k), strings.Join(connParams, ", "))
			}
			c.Params[k] = v
		}
	}
	if len(c.Prefix) > 32 {
		return nil, fmt.Errorf("%w: table prefix %s is longer than 32 characters", driver.ErrInvalidArgument, shown(c.Prefix))
	}
	if err := driver.ValidatePrefix(c.Prefix); err != nil {
		return nil, err
	}
	if _, err := c.pgxConfig(c.Database); err != nil {
		return nil, err
	}
	return c, nil
}

// shown quotes a DSN value for an error message, cut to its first 40
// bytes: a message stays short whatever the DSN holds (and the search
// for a password in it stays quick).
func shown(v string) string {
	if len(v) > 40 {
		return strconv.Quote(v[:40]) + "..."
	}
	return strconv.Quote(v)
}

// splitHostPort splits the host part of a postgres:// DSN.
func splitHostPort(hostport string) (host string, port int, err error) {
	var p string
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: the DSN's IPv6 address has no closing ']'", driver.ErrInvalidArgument)
		}
		rest := hostport[end+1:]
		if rest != "" && rest[0] != ':' {
			return "", 0, fmt.Errorf("%w: the DSN's IPv6 address is followed by something other than :port", driver.ErrInvalidArgument)
		}
		host, p = unescapeLenient(hostport[1:end]), strings.TrimPrefix(rest, ":")
	case strings.Count(hostport, ":") > 1:
		return "", 0, fmt.Errorf("%w: the DSN's IPv6 address must be in brackets, as in postgres://user@[::1]:5432/db", driver.ErrInvalidArgument)
	case strings.ContainsAny(hostport, ",@"):
		return "", 0, fmt.Errorf("%w: a postgres:// DSN names one host", driver.ErrInvalidArgument)
	default:
		host, p, _ = strings.Cut(hostport, ":")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if p == "" {
		return host, 5432, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || p[0] < '0' || p[0] > '9' {
		return "", 0, fmt.Errorf("%w: the DSN's port must be a number from 1 to 65535", driver.ErrInvalidArgument)
	}
	return host, n, nil
}

// unescapeLenient percent-decodes s when every '%' in it starts an
// escape, and returns s as it is otherwise.
func unescapeLenient(s string) string {
	if v, err := url.PathUnescape(s); err == nil {
		return v
	}
	return s
}

// address is host:port/database, for messages and StoreInfo.
func (c *Config) address() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) + "/" + c.Database
}

// pgxConfig is the pgx configuration of a connection to database.
func (c *Config) pgxConfig(database string) (*pgx.ConnConfig, error) {
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), Path: "/" + database, RawQuery: q.Encode()}
	if c.User != "" || c.Password != "" {
		u.User = url.UserPassword(c.User, c.Password)
		if c.Password == "" {
			u.User = url.User(c.User)
		}
	}
	pc, err := pgx.ParseConfig(u.String())
	if err != nil {
		// pgconn's message shows the connection string with the password
		// replaced; the setting it names is what matters.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, fmt.Errorf("%w: DSN connection settings: %v", driver.ErrInvalidArgument, pe.Unwrap())
		}
		return nil, fmt.Errorf("%w: DSN connection settings are invalid", driver.ErrInvalidArgument)
	}
	pc.RuntimeParams["timezone"] = "UTC"
	if c.Schema != "" {
		pc.RuntimeParams["search_path"] = `"` + c.Schema + `"`
	}
	if _, ok := c.Params["application_name"]; !ok {
		pc.RuntimeParams["application_name"] = "queuety"
	}
	if _, ok := c.Params["connect_timeout"]; !ok {
		pc.ConnectTimeout = 10 * time.Second
	}
	return pc, nil
}

// openDB opens a pool of connections to database whose statements may
// use ? placeholders.
func (c *Config) openDB(database string) (*sql.DB, error) {
	pc, err := c.pgxConfig(database)
	if err != nil {
		return nil, err
	}
	return openPool(pc), nil
}

// openPool returns a pool of connections made with pc, whose statements
// may use ? placeholders (openDB).
func openPool(pc *pgx.ConnConfig) *sql.DB {
	return sql.OpenDB(newConnector(stdlib.GetConnector(*pc, stdlib.OptionShouldPing(shouldPing))))
}

// shouldPing says whether a pooled connection is pinged before it is used
// again: after a minute idle, not after pgx's default of one second, which
// made an idle worker's every read cost a ping too. A connection that
// died meanwhile fails its statement before sending it, and database/sql
// takes another.
func shouldPing(_ context.Context, p stdlib.ShouldPingParams) bool {
	return p.IdleDuration > time.Minute
}

// Store is the PostgreSQL store.
type Store struct {
	*sqlstore.Store
	cfg     *Config
	channel string // the notification channel of its tables (notify.go)
	// token is the payload of its notifications (notify.go); ShareWake
	// replaces it, under mu.
	token string
	// heard, when set (by tests), is called for every notification the
	// listener hears, with its payload and whether this store sent it.
	heard func(payload string, own bool)
	// closing ends when the store is closed, and with it the listeners.
	closing context.Context
	close   context.CancelFunc

	mu  sync.Mutex
	log *slog.Logger // SetLogger; nil: slog.Default()
}

// Close closes the store's listeners and its connections.
func (s *Store) Close() error {
	s.close()
	return s.Store.Close()
}

// OpenConfig opens a store from a parsed Config.
func OpenConfig(ctx context.Context, cfg *Config) (*Store, error) {
	addr := cfg.address()
	if cfg.Create {
		if err := createDatabase(ctx, cfg); err != nil {
			return nil, err
		}
	}
	pc, err := cfg.pgxConfig(cfg.Database)
	if err != nil {
		return nil, err
	}
	db := openPool(pc)
	var version string
	var num int
	err = db.QueryRowContext(ctx, "SELECT version(), current_setting('server_version_num')::int").Scan(&version, &num)
	if err != nil {
		db.Close()
		if sqlState(err) == "3D000" { // invalid_catalog_name
			return nil, fmt.Errorf("connect to %s: database %q does not exist: create it (CREATE DATABASE %s) or add create=true to the DSN: %w",
				addr, cfg.Database, quoteIdent(cfg.Database), err)
		}
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if num < 120000 {
		db.Close()
		return nil, fmt.Errorf("%s is too old: queuety needs PostgreSQL 12 or newer", version)
	}
	if cfg.Schema != "" {
		if err := ensureSchema(ctx, db, cfg); err != nil {
			db.Close()
			return nil, err
		}
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(min(cfg.MaxOpenConns, 16))
	db.SetConnMaxLifetime(30 * time.Minute)
	db.SetConnMaxIdleTime(5 * time.Minute)
	server := version
	if i := strings.Index(server, " on "); i > 0 {
		server = server[:i]
	}
	if cfg.Schema != "" {
		addr += "?schema=" + cfg.Schema
	}
	info := driver.StoreInfo{Driver: "postgres", Server: server, Prefix: cfg.Prefix, Address: addr}
	s := &Store{cfg: cfg, channel: channel(cfg.Schema, cfg.Prefix), token: newToken()}
	s.closing, s.close = context.WithCancel(context.Background())
	d := dialect
	d.ClaimOptions = claimOptions(pc)
	s.Store = sqlstore.New(db, d, cfg.Prefix, info, migrations(cfg.Prefix, lockName(cfg)))
	return s, nil
}

// claimOptions are the claim's Dialect.ClaimOptions. pgx keeps a
// statement prepared a connection by default, and the server, its plan
// cache mode left at auto, plans a prepared statement with its values
// five times, then goes over to a plan without them when that looks no
// dearer. A claim's generic plan cannot know whether its handlers have a
// few due jobs or most of the queue: on a queue where one handler has
// 60,000 due jobs, it read the claim index through that backlog to claim
// another handler's 5 (79,410 index entries and rows, 10 ms against 0.7).
// The claim goes through the unnamed statement instead, whose description
// pgx keeps, still one round trip and its values still parameters: the
// server parses and plans it with its values each time. A connection set
// to another exec mode keeps it. (plan_cache_mode = force_custom_plan on
// the connection would plan every statement each time, and cost a drained
// job's server CPU four times what this costs: bench/RESULTS.md.)
func claimOptions(pc *pgx.ConnConfig) []any {
	if pc.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement {
		return nil
	}
	if pc.DescriptionCacheCapacity > 0 {
		return []any{pgx.QueryExecModeCacheDescribe}
	}
	return []any{pgx.QueryExecModeDescribeExec}
}

// lockName names the advisory lock of the migrations of one set of
// tables.
func lockName(cfg *Config) string { return "queuety_migrate:" + cfg.Schema + "." + cfg.Prefix }

// createDatabase creates cfg's database when it does not exist,
// connecting to the postgres database first.
func createDatabase(ctx context.Context, cfg *Config) error {
	db, err := cfg.openDB("postgres")
	if err != nil {
		return err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", cfg.Database).Scan(&exists); err != nil {
		return fmt.Errorf("create database %q on %s: %w", cfg.Database, cfg.address(), err)
	}
	if exists {
		return nil
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(cfg.Database))
	if err != nil && sqlState(err) != "42P04" && sqlState(err) != "23505" { // created meanwhile
		return fmt.Errorf("create database %q on %s: %w", cfg.Database, cfg.address(), err)
	}
	return nil
}

// ensureSchema checks that cfg's schema exists, and creates it with
// create=true.
func ensureSchema(ctx context.Context, db *sql.DB, cfg *Config) error {
	if cfg.Create {
		_, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(cfg.Schema))
		if err != nil && sqlState(err) != "42P06" && sqlState(err) != "23505" {
			return fmt.Errorf("create schema %q on %s: %w", cfg.Schema, cfg.address(), err)
		}
		return nil
	}
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ?)", cfg.Schema).Scan(&exists); err != nil {
		return fmt.Errorf("look for schema %q on %s: %w", cfg.Schema, cfg.address(), err)
	}
	if !exists {
		return fmt.Errorf("schema %q does not exist in %s: create it (CREATE SCHEMA %s) or add create=true to the DSN",
			cfg.Schema, cfg.address(), quoteIdent(cfg.Schema))
	}
	return nil
}

// quoteIdent quotes a name for SQL.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var dialect = sqlstore.Dialect{
	Name:       "postgres",
	ForUpdate:  " FOR UPDATE",
	SkipLocked: " FOR UPDATE SKIP LOCKED",
	// A failed statement aborts the transaction; inserts have no last
	// insert id, so they return their ids.
	AbortsOnError:  true,
	Returning:      true,
	ClaimReturning: true,
	// A claim reads each handler's due jobs through idx_go_claim_handler
	// (schema version 5), not the queue's pending jobs in claim order,
	// which pass every pending job of a handler it does not run.
	ClaimByHandler: true,
	// The CHECK of the jobs' status column leaves processing the one
	// state these do not name: a condition no partial index's predicate
	// follows from, so a job found by id is read through the primary key
	// whatever the statistics say.
	ProcessingByID: "status NOT IN ('pending', 'completed', 'failed', 'buried')",
	// The same for the jobs completed by id and a workflow's jobs by
	// status: status IN ('pending', 'processing') is idx_handler_status's
	// predicate.
	StatusByComplement: true,
	BigInt:             "BIGINT",
	// Whole seconds, cut toward zero as MySQL's TIMESTAMPDIFF cuts them.
	SecondsBetween: func(from, to string) string {
		return "CAST(TRUNC(EXTRACT(EPOCH FROM (" + to + " - " + from + "))) AS BIGINT)"
	},
	// A batch's rows go as one array a column, its ids as one array: a
	// statement's text does not change with its row count, so it is
	// parsed once a connection and planned in constant time.
	Arrays:    true,
	Retryable: retryable,
	Duplicate: func(err error) bool { return sqlState(err) == "23505" },
	DataError: dataError,
	Time: func(t time.Time, frac bool) any {
		if frac {
			return t.UTC().Truncate(time.Microsecond)
		}
		return t.UTC().Truncate(time.Second)
	},
	Begin: func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
	Upsert: func(key, set []string) string {
		parts := make([]string, len(set))
		for i, c := range set {
			parts[i] = c + " = excluded." + c
		}
		return " ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(parts, ", ")
	},
}

// retryable reports the server errors after which a transaction is run
// again from its start: nothing of it was applied. 40001 is a
// serialization failure, 40P01 a deadlock, 55P03 a lock that was not
// available in time (lock_timeout).
func retryable(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01", "55P03":
		return true
	}
	return false
}

// dataError reports the errors a row's values cause: a data exception
// (class 22: out of range, too long, invalid text such as a NUL byte or
// malformed JSON), a NOT NULL or a CHECK constraint.
func dataError(err error) bool {
	s := sqlState(err)
	return strings.HasPrefix(s, "22") || s == "23502" || s == "23514"
}
