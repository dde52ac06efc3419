// Package mysql is the queuety store for MySQL 8.0.1+ and MariaDB 10.6+
// (both have SELECT ... FOR UPDATE SKIP LOCKED). It uses Queuety's tables
// with their exact names, columns, enums and indexes, so Go workers and
// Queuety PHP can share one database.
//
// Import it for its side effect, then open a DSN:
//
//	import _ "github.com/queuety/queuety-go/store/mysql"
//
//	q, err := queuety.Open(ctx, "mysql://user:pass@127.0.0.1:3306/wordpress?prefix=wp_")
//
// DSNs are either URLs (mysql://user:pass@host:port/db?prefix=wp_, with
// ?socket=/path for a Unix socket) or go-sql-driver DSNs
// (user:pass@tcp(host:3306)/db?prefix=wp_). The prefix parameter is the
// WordPress table prefix (default wp_, ^[A-Za-z0-9_]{0,32}$); create=true
// creates the database when it does not exist; other parameters go to the
// driver. Other store parameters: max_open_conns (default 64); wake=false
// turns off the wake-up of idle workers in other processes (see
// NotifyJobs), for a proxy that multiplexes connections; schema=lean
// drops the indexes of Queuety PHP's jobs and logs tables that only
// Queuety PHP's own queries read, for databases no Queuety PHP worker
// uses (Migrate applies it; a store opened without it puts them back).
//
// A DSN may name several servers, for failover without a proxy:
// mysql://u:p@h1:3306,h2:3306,h3:3306/db or u:p@tcp(h1:3306,h2:3306)/db.
// Each new connection goes to the first healthy server, in the DSN's
// order from the one the last good connection went to: one that answers
// and, on a Galera node, is ready, synced (wsrep_local_state 4) and not
// refusing queries. A connection that meets error 1047 is given up, and a
// pooled connection is checked again when the pool hands it out if its
// last check is 2 s old, so the pool moves off a node that dies, desyncs
// or leaves the cluster. The connect
// timeout then defaults to 3 s per server.
//
// Table names follow Queuety PHP's Config: a table is
// <prefix><table prefix><name> (wp_queuety_jobs), or <prefix><override>
// when a table has a name of its own. table_prefix (default queuety_;
// trimmed, one trailing underscore added unless empty, as PHP does) and
// table_<name> for each of Queuety's tables (table_jobs, table_workflows,
// table_logs, table_schedules, table_queue_states, table_webhooks,
// table_signals, table_workflow_dependencies, table_workflow_dispatch_keys,
// table_locks, table_batches, table_chunks, table_workflow_events,
// table_artifacts, table_state_machines, table_state_machine_events) set
// them. Each setting is taken from its DSN parameter, else from the
// environment variable PHP's constant is named after (QUEUETY_TABLE_PREFIX,
// QUEUETY_TABLE_JOBS, ...; set but empty counts as set), else the default;
// a table's own name wins over the table prefix, as in PHP. The Go
// engine's tables are <prefix><table prefix>go_<name>. Names must be ASCII
// letters, digits and underscores, at most 64 characters with the prefix,
// and all different; anything else is an error naming the setting.
//
// In a URL the user information ends at the last '@', so a password may
// be written as it is, with '@', ':', '/', '?', '#' or "://" in it, or
// percent-encoded (a '%' that starts an escape is decoded: write a literal
// one as %25 to be sure); an '@' in the parameters must then be written
// %40. Errors never show the DSN or its password, even for a DSN that does
// not parse.
//
// Query parameters are escaped into the SQL on the client (the driver's
// interpolateParams), which saves the round trips of a server-side
// prepared statement on every query outside the prepared claim and
// completion; interpolateParams=false turns that off. While it is on, the
// connection's character set must be one under which escaping is safe:
// the Unicode, single-byte and EUC character sets. big5, cp932, gbk,
// gb18030 and sjis can end a character in a backslash byte, so a value
// could end its own string; a DSN asking for one (charset, collation,
// character_set_client) is refused, and so is every connection the server
// gives one.
//
// Every session runs with time_zone '+00:00' and READ COMMITTED isolation:
// timestamps are UTC, and claim scans release the rows they skip. The store
// checks the server version at open and refuses servers without SKIP
// LOCKED. It warns when the server's own time zone is not UTC, because
// Queuety PHP workers on the same database compare UTC strings with NOW()
// and would then schedule early or late.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/driver"
)

func init() { driver.Register("mysql", driver.NewDriver(ParseDSN, OpenConfig)) }

// Config is a parsed DSN.
type Config struct {
	// Driver is the driver's configuration. OpenConfig keeps its
	// InterpolateParams, which ParseDSN sets unless the DSN says
	// interpolateParams=false.
	Driver *gomysql.Config
	Prefix string
	// TablePrefix and Tables name the tables after Prefix as Queuety PHP's
	// QUEUETY_TABLE_PREFIX and QUEUETY_TABLE_<NAME> constants do: the
	// DSN parameters table_prefix and table_<name> (jobs, workflows, ...),
	// else the environment variables of those names, else "queuety_" and
	// no overrides. Tables maps a base name ("jobs") to the table's name
	// after Prefix. A Config made by hand with neither set uses the
	// defaults; ParseDSN always sets Tables (empty when nothing is
	// overridden), so an empty TablePrefix then means none, as in PHP.
	TablePrefix  string
	Tables       map[string]string
	MaxOpenConns int
	// Create creates the database when it does not exist (the DSN
	// parameter create=true).
	Create bool
	// NoWake turns off the wake-up of idle workers in other processes
	// (the DSN parameter wake=false): they then find new jobs by polling.
	NoWake bool
	// Lean selects the lean index set (the DSN parameter schema=lean,
	// default schema=queuety): Migrate drops the indexes of Queuety PHP's
	// jobs and logs tables that only Queuety PHP's queries read (see
	// leanDropped), for a database no Queuety PHP worker uses.
	Lean bool
	// Hosts are the servers of a DSN that names several
	// (mysql://u:p@h1:3306,h2:3306/db or u:p@tcp(h1:3306,h2:3306)/db), as
	// host:port in the DSN's order; Driver.Addr is the first. It is empty
	// for a DSN naming one server.
	Hosts []string
}

// ParseDSN parses either DSN form. Its errors never hold the DSN's
// password (see driver.RedactError).
func ParseDSN(dsn string) (*Config, error) {
	c, err := parseDSN(dsn)
	if err != nil {
		return nil, driver.RedactError(err, dsn)
	}
	return c, nil
}

func parseDSN(dsn string) (*Config, error) {
	c := &Config{Prefix: driver.DefaultPrefix, MaxOpenConns: 64}
	var dc *gomysql.Config
	var interpolate bool
	if strings.HasPrefix(strings.ToLower(dsn), "mysql://") {
		var rawQuery string
		var err error
		dc, c.Hosts, rawQuery, err = parseURL(dsn)
		if err != nil {
			return nil, err
		}
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return nil, fmt.Errorf("%w: DSN parameters: %v", driver.ErrInvalidArgument, err)
		}
		if interpolate, err = c.checkParams(q); err != nil {
			return nil, err
		}
		if s := q.Get("socket"); s != "" {
			if len(c.Hosts) > 1 {
				return nil, fmt.Errorf("%w: a DSN with a socket names no hosts", driver.ErrInvalidArgument)
			}
			dc.Net, dc.Addr = "unix", s
			q.Del("socket")
		}
		if err := c.takeParams(q); err != nil {
			return nil, err
		}
		for k, vs := range q {
			if err := applyDriverParam(dc, k, vs[len(vs)-1]); err != nil {
				return nil, err
			}
		}
	} else {
		// The parameters start at the first '?' after the last '/', as in
		// go-sql-driver: a password may itself hold '?' or '/'.
		base, rawQuery := dsn, ""
		if i := strings.LastIndex(dsn, "/"); i >= 0 {
			if j := strings.IndexByte(dsn[i:], '?'); j >= 0 {
				base, rawQuery = dsn[:i+j], dsn[i+j+1:]
			}
		}
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return nil, fmt.Errorf("%w: DSN parameters: %v", driver.ErrInvalidArgument, err)
		}
		if interpolate, err = c.checkParams(q); err != nil {
			return nil, err
		}
		if err := c.takeParams(q); err != nil {
			return nil, err
		}
		if base, c.Hosts, err = splitDriverHosts(base); err != nil {
			return nil, err
		}
		rest := q.Encode()
		if rest != "" {
			base += "?" + rest
		}
		dc, err = gomysql.ParseDSN(base)
		if err != nil {
			return nil, fmt.Errorf("parse DSN: %w", driverDSNError(err))
		}
		if len(c.Hosts) > 0 {
			c.Hosts[0] = dc.Addr
		}
	}
	if dc.DBName == "" {
		return nil, fmt.Errorf("%w: DSN names no database", driver.ErrInvalidArgument)
	}
	dc.InterpolateParams = interpolate
	c.Driver = dc
	if err := driver.ValidatePrefix(c.Prefix); err != nil {
		return nil, err
	}
	return c, c.names().Validate()
}

// names is how c names the tables.
func (c *Config) names() sqlstore.Names {
	n := sqlstore.DefaultNames(c.Prefix)
	if c.TablePrefix != "" || c.Tables != nil {
		n.TablePrefix = c.TablePrefix
	}
	if len(c.Tables) > 0 {
		n.Override = c.Tables
	}
	return n
}

// checkParams reads whether parameters are interpolated on the client and
// refuses a character set under which that is unsafe.
func (c *Config) checkParams(q url.Values) (interpolate bool, err error) {
	if interpolate, err = interpolates(q); err != nil {
		return false, err
	}
	return interpolate, checkCharsetParams(q, interpolate)
}

// driverDSNError is err from go-sql-driver's DSN parser, with the one
// message that quotes the DSN's head replaced: when nothing in a DSN has
// the user:password@net(address)/ shape, the driver takes everything
// before the last '/' for a network name and shows it, and that text may
// be a user and part of a password.
func driverDSNError(err error) error {
	if strings.HasPrefix(err.Error(), "default addr for network") {
		return errors.New("the DSN has no user:password@tcp(host:port)/database structure (the network before '(' is not tcp or unix)")
	}
	return err
}

// takeParams removes the store's own parameters from q.
func (c *Config) takeParams(q url.Values) error {
	for _, k := range []string{"prefix", "max_open_conns", "socket", "create", "wake", "schema"} {
		if len(q[k]) > 1 {
			return fmt.Errorf("%w: DSN parameter %s is given %d times", driver.ErrInvalidArgument, k, len(q[k]))
		}
	}
	if q.Has("prefix") {
		c.Prefix = q.Get("prefix")
		q.Del("prefix")
	}
	n, err := sqlstore.TableSettings(c.Prefix, q, os.LookupEnv)
	if err != nil {
		return err
	}
	c.TablePrefix, c.Tables = n.TablePrefix, n.Override
	if c.Tables == nil {
		c.Tables = map[string]string{}
	}
	if q.Has("create") {
		v, err := strconv.ParseBool(q.Get("create"))
		if err != nil {
			return fmt.Errorf("%w: create must be true or false, got %q", driver.ErrInvalidArgument, q.Get("create"))
		}
		c.Create = v
		q.Del("create")
	}
	if q.Has("wake") {
		v, err := strconv.ParseBool(q.Get("wake"))
		if err != nil {
			return fmt.Errorf("%w: wake must be true or false, got %q", driver.ErrInvalidArgument, q.Get("wake"))
		}
		c.NoWake = !v
		q.Del("wake")
	}
	if q.Has("schema") {
		switch v := q.Get("schema"); v {
		case schemaQueuety, schemaLean:
			c.Lean = v == schemaLean
		default:
			return fmt.Errorf("%w: schema must be %s or %s, got %q", driver.ErrInvalidArgument, schemaQueuety, schemaLean, v)
		}
		q.Del("schema")
	}
	if q.Has("max_open_conns") {
		n, err := strconv.Atoi(q.Get("max_open_conns"))
		if err != nil || n < 1 {
			return fmt.Errorf("%w: max_open_conns must be a positive integer", driver.ErrInvalidArgument)
		}
		c.MaxOpenConns = n
		q.Del("max_open_conns")
	}
	return nil
}

// applyDriverParam passes a URL parameter to go-sql-driver by round-tripping
// it through the driver's own DSN parser.
func applyDriverParam(dc *gomysql.Config, k, v string) error {
	probe, err := gomysql.ParseDSN("/x?" + url.Values{k: {v}}.Encode())
	if err != nil {
		return fmt.Errorf("DSN parameter %s: %w", k, err)
	}
	switch {
	case len(probe.Params) > 0:
		if dc.Params == nil {
			dc.Params = map[string]string{}
		}
		for pk, pv := range probe.Params {
			dc.Params[pk] = pv
		}
	default:
		// A driver option (timeout, tls, ...): re-parse it into dc.
		merged, err := gomysql.ParseDSN(dc.FormatDSN() + sep(dc.FormatDSN()) + url.Values{k: {v}}.Encode())
		if err != nil {
			return fmt.Errorf("DSN parameter %s: %w", k, err)
		}
		*dc = *merged
	}
	return nil
}

func sep(dsn string) string {
	if strings.Contains(dsn, "?") {
		return "&"
	}
	return "?"
}

func netJoin(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// parseURL reads a mysql:// DSN,
//
//	mysql://[user[:password]@][host[:port]][/database][?parameters]
//
// by its structure, never echoing any of it in an error, since a DSN that
// does not parse may still hold a password. The user information ends at
// the last '@', so a password may hold '@', ':', '/', '?', '#' and "://"
// as they are; an '@' in the parameters must be written %40. The user
// name and the password are percent-decoded when every '%' in them starts
// an escape (so a URL-encoded password works) and taken as written
// otherwise (a password such as 50%off works too). The host is a name, an
// IPv4 address or an IPv6 address in brackets, or a comma-separated list
// of them, each with its own port; no host means 127.0.0.1, no port 3306.
// It returns the hosts of a list (nil for one host) and the parameters
// undecoded.
func parseURL(dsn string) (dc *gomysql.Config, hosts []string, rawQuery string, err error) {
	rest := dsn[len("mysql://"):]
	dc = gomysql.NewConfig()
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, pass, hasPass := strings.Cut(rest[:at], ":")
		dc.User = unescapeLenient(user)
		if hasPass {
			dc.Passwd = unescapeLenient(pass)
		}
		rest = rest[at+1:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		return nil, nil, "", fmt.Errorf("%w: a mysql:// DSN has no #fragment (write a '#' in the database name or a parameter as %%23)", driver.ErrInvalidArgument)
	}
	rest, rawQuery, _ = strings.Cut(rest, "?")
	hostport, path, _ := strings.Cut(rest, "/")
	if hosts, err = splitHosts(hostport); err != nil {
		return nil, nil, "", err
	}
	dc.Net, dc.Addr = "tcp", hosts[0]
	if len(hosts) == 1 {
		hosts = nil
	}
	if dc.DBName, err = url.PathUnescape(path); err != nil {
		return nil, nil, "", fmt.Errorf("%w: the DSN's database name has a '%%' that starts no escape (write it as %%25)", driver.ErrInvalidArgument)
	}
	return dc, hosts, rawQuery, nil
}

// splitHostPort splits the host part of a mysql:// DSN.
func splitHostPort(hostport string) (host, port string, err error) {
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", fmt.Errorf("%w: the DSN's IPv6 address has no closing ']'", driver.ErrInvalidArgument)
		}
		rest := hostport[end+1:]
		if rest != "" && rest[0] != ':' {
			return "", "", fmt.Errorf("%w: the DSN's IPv6 address is followed by something other than :port", driver.ErrInvalidArgument)
		}
		// A zone is percent-encoded: [fe80::1%25eth0].
		host, port = unescapeLenient(hostport[1:end]), strings.TrimPrefix(rest, ":")
	case strings.Count(hostport, ":") > 1:
		return "", "", fmt.Errorf("%w: the DSN's IPv6 address must be in brackets, as in mysql://user@[::1]:3306/db", driver.ErrInvalidArgument)
	default:
		host, port, _ = strings.Cut(hostport, ":")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		return host, "3306", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] < '0' || port[0] > '9' {
		return "", "", fmt.Errorf("%w: the DSN's port must be a number from 1 to 65535", driver.ErrInvalidArgument)
	}
	return host, port, nil
}

// unescapeLenient percent-decodes s when every '%' in it starts an
// escape, and returns s as it is otherwise.
func unescapeLenient(s string) string {
	if v, err := url.PathUnescape(s); err == nil {
		return v
	}
	return s
}

// ServerVersion describes the connected server.
type ServerVersion struct {
	Raw          string
	MariaDB      bool
	Major, Minor int
}

// ParseServerVersion reads SELECT VERSION() output.
func ParseServerVersion(v string) (ServerVersion, error) {
	sv := ServerVersion{Raw: v, MariaDB: strings.Contains(strings.ToLower(v), "mariadb")}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return sv, fmt.Errorf("unrecognised server version %q", v)
	}
	var err error
	if sv.Major, err = strconv.Atoi(parts[0]); err != nil {
		return sv, fmt.Errorf("unrecognised server version %q", v)
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	if sv.Minor, err = strconv.Atoi(minor); err != nil {
		return sv, fmt.Errorf("unrecognised server version %q", v)
	}
	return sv, nil
}

func (v ServerVersion) atLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// Supported reports whether the server has SKIP LOCKED, with a message
// saying why not.
func (v ServerVersion) Supported() error {
	if v.MariaDB && !v.atLeast(10, 6) {
		return fmt.Errorf("MariaDB %s is too old: queuety needs MariaDB 10.6 or newer (SELECT ... FOR UPDATE SKIP LOCKED)", v.Raw)
	}
	if !v.MariaDB && !v.atLeast(8, 0) {
		return fmt.Errorf("MySQL %s is too old: queuety needs MySQL 8.0.1 or newer (SELECT ... FOR UPDATE SKIP LOCKED)", v.Raw)
	}
	if !v.MariaDB && v.Major == 8 && v.Minor == 0 && strings.HasPrefix(v.Raw, "8.0.0") {
		return fmt.Errorf("MySQL %s is too old: queuety needs MySQL 8.0.1 or newer (SELECT ... FOR UPDATE SKIP LOCKED)", v.Raw)
	}
	return nil
}

// isolationVariable is the session variable that sets the isolation level.
func (v ServerVersion) isolationVariable() string {
	if v.MariaDB && !v.atLeast(11, 1) {
		return "tx_isolation"
	}
	return "transaction_isolation"
}

// OpenConfig opens a store from a parsed Config.
func OpenConfig(ctx context.Context, cfg *Config) (*Store, error) {
	dc := cfg.Driver.Clone()
	dc.ParseTime = true
	dc.Loc = time.UTC
	// RowsAffected counts matched rows, as on SQLite, so a compare-and-set
	// UPDATE that rewrites a row's current values still reports it.
	dc.ClientFoundRows = true
	addr := dc.Addr
	if dc.Timeout == 0 {
		dc.Timeout = 10 * time.Second
		if len(cfg.Hosts) > 1 {
			// A server that is down without refusing connections costs
			// this long before the next one is tried.
			dc.Timeout = 3 * time.Second
		}
	}
	if len(cfg.Hosts) > 1 {
		addr = strings.Join(cfg.Hosts, ",")
	}
	if cfg.Create {
		if err := createDatabase(ctx, dc, cfg.Hosts); err != nil {
			return nil, err
		}
	}
	probeDB, err := openDB(dc, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	var raw string
	var incr int64
	var tz string
	var offset int64
	var galera, replicates bool
	err = probeDB.QueryRowContext(ctx, "SELECT VERSION(), @@auto_increment_increment, @@global.time_zone, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())").
		Scan(&raw, &incr, &tz, &offset)
	if err == nil {
		galera, err = wsrepOn(ctx, probeDB, "GLOBAL")
	}
	if err == nil && galera {
		replicates, err = wsrepOn(ctx, probeDB, "SESSION")
	}
	probeDB.Close()
	if err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) && me.Number == 1049 { // ER_BAD_DB_ERROR
			return nil, fmt.Errorf("connect to %s: database %q does not exist: create it (CREATE DATABASE `%s`) or add create=true to the DSN: %w",
				addr, dc.DBName, dc.DBName, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	ver, err := ParseServerVersion(raw)
	if err != nil {
		return nil, err
	}
	if err := ver.Supported(); err != nil {
		return nil, err
	}
	if dc.Params == nil {
		dc.Params = map[string]string{}
	}
	dc.Params["time_zone"] = "'+00:00'"
	dc.Params[ver.isolationVariable()] = "'READ-COMMITTED'"
	db, err := openDB(dc, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(min(cfg.MaxOpenConns, 32))
	db.SetConnMaxLifetime(30 * time.Minute)
	db.SetConnMaxIdleTime(5 * time.Minute)

	info := driver.StoreInfo{Driver: "mysql", Server: raw, Prefix: cfg.Prefix, Address: addr + "/" + dc.DBName, Schema: schemaQueuety}
	if cfg.Lean {
		info.Schema = schemaLean
	}
	if offset != 0 {
		info.Warnings = append(info.Warnings, fmt.Sprintf(
			"server time zone %q is %+d s from UTC: Go sessions use UTC, but Queuety PHP workers on this database compare UTC times with NOW() and will run jobs and deadlines early or late; set the server's time_zone to '+00:00'",
			tz, offset))
	}
	if !ver.MariaDB || ver.atLeast(10, 8) {
		// descending index parts are honoured
	} else {
		info.Warnings = append(info.Warnings, fmt.Sprintf(
			"MariaDB %s ignores descending index parts, so claims sort their candidates (correct, but slower with long backlogs); MariaDB 10.8+ avoids it", raw))
	}
	s := &Store{cfg: cfg, version: ver, dc: dc, closing: make(chan struct{})}
	s.wake.sql = listenSQL(dc.DBName, cfg.names())
	if galera && !cfg.NoWake {
		if s.wake.cluster, err = newWakeCluster(dc, cfg.Hosts); err != nil {
			db.Close()
			return nil, err
		}
	}
	names := cfg.names()
	d := dialect(incr)
	if galera {
		// wsrep_auto_increment_control sets the step to the number of
		// nodes: it changes when a node leaves or joins.
		d.Increment = "SELECT @@session.auto_increment_increment"
	}
	d.Hold, s.noHold = holdSession(ver, replicates)
	// The literals are written as the driver interpolates them; a DSN's
	// timeTruncate would make the driver write some times otherwise.
	d.Literals = !strings.Contains(dc.FormatDSN(), "timeTruncate=")
	s.Store = sqlstore.NewNamed(db, d, names, info, namedMigrations(names))
	return s, nil
}

// wsrepOn reports whether wsrep_on is ON in scope (GLOBAL: the server is
// a node of a Galera cluster; SESSION: a connection's writes replicate,
// unless the DSN sets wsrep_on=OFF); servers without the variable have
// it off.
func wsrepOn(ctx context.Context, db *sql.DB, scope string) (bool, error) {
	var name, value string
	err := db.QueryRowContext(ctx, "SHOW "+scope+" VARIABLES LIKE 'wsrep_on'").Scan(&name, &value)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read wsrep_on: %w", err)
	}
	return strings.EqualFold(value, "ON"), nil
}

// createDatabase creates dc's database when it does not exist, connecting
// without a database first.
func createDatabase(ctx context.Context, dc *gomysql.Config, hosts []string) error {
	server := dc.Clone()
	server.DBName = ""
	db, err := openDB(server, hosts)
	if err != nil {
		return err
	}
	defer db.Close()
	name := strings.ReplaceAll(dc.DBName, "`", "``")
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		addr := dc.Addr
		if len(hosts) > 1 {
			addr = strings.Join(hosts, ",")
		}
		return fmt.Errorf("create database %q on %s: %w", dc.DBName, addr, err)
	}
	return nil
}

// openDB opens a pool on dc, or, when hosts names several servers, on the
// first healthy one of them (failoverConnector).
func openDB(dc *gomysql.Config, hosts []string) (*sql.DB, error) {
	if len(hosts) > 1 {
		fc, err := newFailoverConnector(dc, hosts)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(fc), nil
	}
	conn, err := gomysql.NewConnector(dc)
	if err != nil {
		return nil, fmt.Errorf("configure driver: %w", err)
	}
	if dc.InterpolateParams {
		conn = checkedConnector{conn}
	}
	return sql.OpenDB(conn), nil
}

// Store is the MySQL store.
type Store struct {
	*sqlstore.Store
	cfg     *Config
	version ServerVersion
	// dc is the driver configuration the pool connects with; the wake-up
	// listener connects with it outside the pool.
	dc        *gomysql.Config
	closing   chan struct{}
	closeOnce sync.Once
	wake      wakeState
	// noHold is why the store holds no claims on a server that could
	// (NoHeldClaims); empty otherwise.
	noHold string
}

// Close implements driver.Store: it also stops the wake-up listener.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.wake.cluster != nil {
			s.wake.cluster.close()
		}
	})
	return s.Store.Close()
}

// Version returns the server version.
func (s *Store) Version() ServerVersion { return s.version }

// dialect returns the MySQL dialect; incr is @@auto_increment_increment.
func dialect(incr int64) sqlstore.Dialect {
	if incr < 1 {
		incr = 1
	}
	return sqlstore.Dialect{
		Name:           "mysql",
		ForUpdate:      " FOR UPDATE",
		SkipLocked:     " FOR UPDATE SKIP LOCKED",
		ByID:           " FORCE INDEX (PRIMARY)",
		ByWorkflow:     " FORCE INDEX (idx_workflow)",
		ClaimHint:      " FORCE INDEX (" + claimIndex + ")",
		RunningHint:    " FORCE INDEX (idx_status)",
		UnreservedHint: " FORCE INDEX (idx_reserved)",
		LogsByTime:     " FORCE INDEX (idx_created)",
		// A claim reads its candidates without locks, then locks them by
		// id: a locking scan of the claim index waded through the entries
		// of recently claimed jobs that purge had yet to remove, most of
		// a claim's time in a steady drain.
		TwoStepClaim: true,
		// MariaDB materializes the claim's correlated EXISTS tests (its
		// exists_to_in rewrite): every finished workflow and completed
		// job read at every claim.
		ScalarBlockers: true,
		PrepareHot:     true,
		Retryable:      retryable,
		Duplicate:      func(err error) bool { return errNumber(err) == 1062 },
		DataError:      func(err error) bool { return dataErrors[errNumber(err)] },
		Time: func(t time.Time, frac bool) any {
			if frac {
				return t.UTC().Truncate(time.Microsecond)
			}
			return t.UTC().Truncate(time.Second)
		},
		SecondsBetween: func(from, to string) string { return "TIMESTAMPDIFF(SECOND, " + from + ", " + to + ")" },
		InsertIDs: func(res sql.Result, n int) ([]int64, error) {
			first, err := res.LastInsertId()
			if err != nil {
				return nil, err
			}
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = first + int64(i)*incr
			}
			return ids, nil
		},
		Begin: func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		Upsert: func(_, set []string) string {
			parts := make([]string, len(set))
			for i, c := range set {
				parts[i] = c + " = VALUES(" + c + ")"
			}
			return " ON DUPLICATE KEY UPDATE " + strings.Join(parts, ", ")
		},
	}
}

// retryable reports the server errors after which a transaction is run
// again from its start: nothing of it was applied.
//
//   - 1213, a deadlock. On a Galera cluster it is also a certification
//     failure: a write set that conflicts with one another node committed
//     first, reported by COMMIT ("WSREP detected deadlock/conflict and
//     aborted the transaction"), or by the next statement of a
//     transaction a replicated write aborted.
//   - 1205, a lock-wait timeout.
//   - 1047, a Galera node that is not a synced member of a primary
//     component ("WSREP has not yet prepared node for application use"):
//     it refuses every statement, COMMIT included, before running it.
func retryable(err error) bool {
	switch errNumber(err) {
	case 1213, 1205, 1047:
		return true
	}
	return false
}

// dataErrors are the server errors a row's values cause: the statement
// would succeed on other rows.
var dataErrors = map[uint16]bool{
	1048: true, // column cannot be null
	1264: true, // out of range value for column
	1265: true, // data truncated for column
	1292: true, // truncated incorrect value
	1366: true, // incorrect value for column
	1367: true, // illegal value found during parsing
	1406: true, // data too long for column
	1690: true, // value is out of range (an expression)
	3819: true, // check constraint is violated (MySQL)
	4025: true, // CONSTRAINT failed (MariaDB)
}

func errNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
