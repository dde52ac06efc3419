// Package wpconfig reads the database settings of a WordPress site from its
// wp-config.php without running PHP.
//
// It is the Go counterpart of Queuety's standalone-worker bootstrap, which
// extracts DB_NAME, DB_USER, DB_PASSWORD, DB_HOST and $table_prefix from
// wp-config.php so that workers can reach the same tables as WordPress.
// Besides literal strings,
//
//	define( 'DB_NAME', 'wordpress' );
//	define( "DB_HOST", "db.internal:3307" );
//	$table_prefix = 'wp_';
//
// it evaluates the small set of expressions real sites use to take these
// settings from the environment, such as the official WordPress Docker
// image's wp-config-docker.php:
//
//	define( 'DB_NAME', getenv_docker('WORDPRESS_DB_NAME', 'wordpress') );
//	define( 'DB_HOST', getenv('DB_HOST') ?: 'localhost' );
//	define( 'DB_USER', $_ENV['DB_USER'] ?? 'wp' );
//	define( 'DB_PASSWORD', $_SERVER['DB_PASSWORD'] );
//	define( 'MY_DB', 'shop' ); define( 'DB_NAME', MY_DB . '_' . getenv('STAGE') );
//	$table_prefix = 'wp_' . getenv('SITE_SUFFIX');
//
// That is: single- and double-quoted strings (without variable
// interpolation), getenv('X'), getenv_docker('X', 'default') (X_FILE, when
// set, names a file whose contents win, as in the Docker image), $_ENV['X'],
// $_SERVER['X'], constants defined earlier in the file, concatenation with
// ".", "?:", "??" and parentheses. Environment variables are those of the
// process reading the file (see Options), which stands in for PHP's
// environment; $_ENV and $_SERVER are read as if PHP filled them from it.
// Anything else (other functions, variables, the full ternary operator) is
// an error naming the setting and its line, wrapping ErrUnsupported.
//
// Unlike Queuety's regular expressions, it tokenizes the file the way PHP
// does, so defines inside comments, strings or inline HTML are ignored and
// escaped quotes inside values are decoded.
//
// The file is not executed, so control flow is not evaluated: the first
// define() of a constant in the file is the one used (PHP also keeps the first
// definition, but only among the defines that actually run), and the last
// plain assignment to $table_prefix wins.
package wpconfig

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/driver"
)

// DefaultPort is the MySQL TCP port used when DB_HOST does not name one.
const DefaultPort = 3306

// DefaultTablePrefix is WordPress's table prefix when wp-config.php does not
// assign $table_prefix.
const DefaultTablePrefix = "wp_"

// ErrNotDefined is wrapped by the error returned when a required constant
// (DB_NAME, DB_USER or DB_HOST) is not defined in wp-config.php.
var ErrNotDefined = errors.New("not defined")

// ErrUnsupported is wrapped by the error returned when a database constant or
// $table_prefix is set by an expression the reader does not evaluate, for
// example define('DB_PASSWORD', my_secret('db')).
var ErrUnsupported = errors.New("unsupported expression")

// Config holds the database settings of a WordPress site.
//
// Host, Port and Socket are derived from DBHost, which accepts the forms
// WordPress and Queuety accept: "host", "host:port", "/path/to/mysqld.sock",
// "host:/path/to/mysqld.sock", "[ipv6]:port", "[ipv6]" and a bare IPv6
// address such as "::1". When a socket is given, Socket is set, Host is empty
// and the host part of DBHost is ignored (as Queuety's PDO connection does).
//
// "localhost" is kept as a TCP host. PHP's mysqli and pdo_mysql treat
// "localhost" as "connect through the default Unix socket", but Go's MySQL
// driver has no default socket path, so Config and DSN connect to
// localhost:3306 over TCP instead. On a server where MySQL listens only on a
// socket, write the socket path into DB_HOST ("localhost:/run/mysqld/mysqld.sock").
type Config struct {
	// DBName, DBUser and DBPassword are the DB_NAME, DB_USER and
	// DB_PASSWORD values, decoded from their PHP string literals.
	DBName, DBUser, DBPassword string

	// DBHost is the raw DB_HOST value.
	DBHost string
	// Host is the host name or IP address (without brackets for IPv6), or ""
	// when a Unix socket is used. An empty DB_HOST, or one that names only a
	// port (":3307"), means "localhost", as in mysqli.
	Host string
	// Port is the TCP port: DefaultPort (3306) when DB_HOST does not name one.
	Port int
	// Socket is the Unix socket path, if DB_HOST names one.
	Socket string
	// TablePrefix is $table_prefix: DefaultTablePrefix ("wp_") when absent.
	// It matches ^[A-Za-z0-9_]{0,32}$.
	TablePrefix string
	// Tables holds Queuety's table-name constants the file defines, as the
	// store's DSN parameters: QUEUETY_TABLE_PREFIX as "table_prefix",
	// QUEUETY_TABLE_JOBS as "table_jobs", and so on. DSN and URL pass
	// them on, so a Go worker names the tables as Queuety PHP on the site
	// does; the store validates them.
	Tables map[string]string
}

// Parse reads the database settings from the contents of a wp-config.php
// file, evaluating expressions with the process environment. DB_NAME,
// DB_USER and DB_HOST must be defined; a missing DB_PASSWORD means an empty
// password. Errors about a line start with "line N: " and wrap ErrNotDefined
// or ErrUnsupported where those apply.
func Parse(src []byte) (Config, error) {
	return Options{}.Parse(src)
}

// ParseFile reads and parses the wp-config.php file at path, evaluating
// expressions with the process environment. Errors name the path, and the
// line as "path:N: ".
func ParseFile(path string) (Config, error) {
	return Options{}.ParseFile(path)
}

// Parse is like the package-level Parse, with o's environment.
func (o Options) Parse(src []byte) (Config, error) {
	cfg, err := parse(src, o)
	if err != nil {
		return Config{}, fmt.Errorf("wpconfig: %w", err)
	}
	return cfg, nil
}

// ParseFile is like the package-level ParseFile, with o's environment.
func (o Options) ParseFile(path string) (Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("wpconfig: %w", err)
	}
	cfg, err := parse(src, o)
	var le *lineError
	switch {
	case err == nil:
		return cfg, nil
	case errors.As(err, &le) && le == err:
		return Config{}, fmt.Errorf("wpconfig: %s:%d: %w", path, le.line, le.err)
	default:
		return Config{}, fmt.Errorf("wpconfig: %s: %w", path, err)
	}
}

// DSN returns a DSN for github.com/go-sql-driver/mysql:
//
//	user:password@tcp(host:port)/dbname?prefix=wp_
//	user:password@tcp([::1]:3306)/dbname?prefix=wp_
//	user:password@unix(/run/mysqld/mysqld.sock)/dbname?prefix=wp_
//
// The password is written verbatim: the driver splits user information at
// the last '@' before the address and the address from the database name at
// the last '/', so passwords containing '@', ':', '/', '?' or any other byte
// round-trip through mysql.ParseDSN. The database name is path-escaped, which
// the driver undoes. Two values cannot be represented: a user name containing
// ':' (the driver splits user from password at the first ':') and a socket
// path containing '@'.
//
// The prefix parameter carries the table prefix for Queuety's store, and
// the table_* parameters the table-name constants (see Config.Tables); they
// are not go-sql-driver options. Remove them from the parsed mysql.Config's
// Params before connecting, or the driver sends it to the server as
// "SET prefix=...", which fails.
//
// A zero Port means DefaultPort, and an empty Host without a Socket means
// "localhost".
func (c Config) DSN() string {
	var b strings.Builder
	b.WriteString(c.DBUser)
	if c.DBPassword != "" {
		b.WriteByte(':')
		b.WriteString(c.DBPassword)
	}
	b.WriteByte('@')
	if c.Socket != "" {
		b.WriteString("unix(")
		b.WriteString(c.Socket)
	} else {
		host, port := c.Host, c.Port
		if host == "" {
			host = "localhost"
		}
		if port == 0 {
			port = DefaultPort
		}
		b.WriteString("tcp(")
		b.WriteString(net.JoinHostPort(host, strconv.Itoa(port)))
	}
	b.WriteString(")/")
	b.WriteString(url.PathEscape(c.DBName))
	b.WriteString("?prefix=")
	b.WriteString(url.QueryEscape(c.TablePrefix))
	if len(c.Tables) > 0 {
		b.WriteByte('&')
		b.WriteString(c.tableParams().Encode())
	}
	return b.String()
}

// URL returns a mysql:// DSN for queuety.Open:
//
//	mysql://user:password@host:port/dbname?prefix=wp_
//	mysql://user:password@[::1]:3306/dbname?prefix=wp_
//	mysql://user:password@/dbname?prefix=wp_&socket=%2Frun%2Fmysqld%2Fmysqld.sock
//
// Every part is percent-encoded, so any user name, password, database
// name or socket path (with ':', '@', '/', '%', "://" or any other byte)
// reaches the store unchanged, and the DSN cannot be taken for another
// store's (a go-sql-driver DSN of a user named "sqlite" whose password
// starts with "//" would read as sqlite://...). A zero Port means
// DefaultPort, and an empty Host without a Socket means "localhost".
func (c Config) URL() string {
	var b strings.Builder
	b.WriteString("mysql://")
	if c.DBPassword != "" {
		b.WriteString(url.UserPassword(c.DBUser, c.DBPassword).String())
	} else {
		b.WriteString(url.User(c.DBUser).String())
	}
	b.WriteByte('@')
	q := c.tableParams()
	q.Set("prefix", c.TablePrefix)
	if c.Socket != "" {
		q.Set("socket", c.Socket)
	} else {
		host, port := c.Host, c.Port
		if host == "" {
			host = "localhost"
		}
		if port == 0 {
			port = DefaultPort
		}
		// An IPv6 zone's '%' is escaped: [fe80::1%25eth0].
		b.WriteString(net.JoinHostPort(strings.ReplaceAll(host, "%", "%25"), strconv.Itoa(port)))
	}
	b.WriteByte('/')
	b.WriteString(url.PathEscape(c.DBName))
	b.WriteByte('?')
	b.WriteString(q.Encode())
	return b.String()
}

// tableParams returns the table-name DSN parameters.
func (c Config) tableParams() url.Values {
	q := url.Values{}
	for k, v := range c.Tables {
		q.Set(k, v)
	}
	return q
}

// constants lists the constants Parse reads, in the order errors report them.
var constants = []string{"DB_NAME", "DB_USER", "DB_PASSWORD", "DB_HOST"}

// optional marks the constants that may be missing: no DB_PASSWORD means an
// empty password.
var optional = map[string]bool{"DB_PASSWORD": true}

// definition is a define() or $table_prefix assignment: its name, the tokens
// of its value and where it is.
type definition struct {
	name string
	toks []token // the value expression
	line int     // line of the define or variable
	at   int     // index of its first token, which orders definitions
}

func parse(src []byte, opts Options) (Config, error) {
	toks, err := lex(src)
	if err != nil {
		return Config{}, err
	}
	defs, prefix := scan(toks)
	ev := newEvaluator(src, opts, defs)

	values := make(map[string]string, len(constants))
	for _, name := range constants {
		d, ok := ev.lookup(name)
		if !ok {
			if optional[name] {
				continue
			}
			return Config{}, fmt.Errorf("%s is %w", name, ErrNotDefined)
		}
		v, err := ev.value(d, "")
		if err != nil {
			return Config{}, err
		}
		values[name] = v
	}

	cfg := Config{
		DBName:      values["DB_NAME"],
		DBUser:      values["DB_USER"],
		DBPassword:  values["DB_PASSWORD"],
		DBHost:      values["DB_HOST"],
		TablePrefix: DefaultTablePrefix,
	}
	if prefix != nil {
		p, err := ev.value(*prefix, "")
		if err != nil {
			return Config{}, err
		}
		if driver.ValidatePrefix(p) != nil {
			return Config{}, errorAt(prefix.line, "invalid $table_prefix %q: use at most 32 letters, digits and underscores", p)
		}
		cfg.TablePrefix = p
	}
	tableConstants := map[string]string{sqlstore.EnvTablePrefix: "table_prefix"}
	for _, base := range sqlstore.QueuetyTables {
		tableConstants[sqlstore.EnvTable(base)] = "table_" + base
	}
	for constant, param := range tableConstants {
		d, ok := ev.lookup(constant)
		if !ok {
			continue
		}
		v, err := ev.value(d, "")
		if err != nil {
			return Config{}, err
		}
		if cfg.Tables == nil {
			cfg.Tables = map[string]string{}
		}
		cfg.Tables[param] = v
	}
	cfg.Host, cfg.Port, cfg.Socket, err = parseHost(cfg.DBHost)
	if err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// scan finds every define() with a literal constant name, in file order, and
// the last plain assignment to $table_prefix.
func scan(toks []token) ([]definition, *definition) {
	var defs []definition
	var prefix *definition
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tokIdent && strings.EqualFold(t.text, "define") && isFunctionCall(toks, i):
			// define ( 'NAME' , value [, case_insensitive] )
			if i+3 >= len(toks) || toks[i+2].kind != tokString || !isPunct(toks[i+3], ',') {
				continue
			}
			defs = append(defs, definition{name: toks[i+2].value, toks: expression(toks, i+4), line: t.line, at: i})
		case t.kind == tokVar && t.text == "$table_prefix":
			// $table_prefix = value ;   (but not ==, ===, =>)
			if i+1 >= len(toks) || !isPunct(toks[i+1], '=') ||
				(i+2 < len(toks) && (isPunct(toks[i+2], '=') || isPunct(toks[i+2], '>'))) {
				continue
			}
			prefix = &definition{name: "$table_prefix", toks: expression(toks, i+2), line: t.line, at: i}
		}
	}
	return defs, prefix
}

// isFunctionCall reports whether the identifier at toks[i] is a call of a
// global function: followed by '(' and not a method call, static call or
// function declaration.
func isFunctionCall(toks []token, i int) bool {
	if i+1 >= len(toks) || !isPunct(toks[i+1], '(') {
		return false
	}
	if i == 0 {
		return true
	}
	prev := toks[i-1]
	switch {
	case isPunct(prev, '>') && i >= 2 && isPunct(toks[i-2], '-'): // $obj->define(
		return false
	case isPunct(prev, ':') && i >= 2 && isPunct(toks[i-2], ':'): // Foo::define(
		return false
	case prev.kind == tokIdent && (strings.EqualFold(prev.text, "function") || strings.EqualFold(prev.text, "new")):
		return false
	}
	return true
}

// expression returns the tokens from toks[start] up to, not including, the
// first ',', ';' or unmatched closing bracket outside nested brackets: one
// function argument or the right-hand side of an assignment statement.
func expression(toks []token, start int) []token {
	depth := 0
	for i := start; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tokPunct {
			continue
		}
		switch t.text[0] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return toks[start:i]
			}
			depth--
		case ',', ';':
			if depth == 0 {
				return toks[start:i]
			}
		}
	}
	return toks[start:]
}

func isPunct(t token, c byte) bool {
	return t.kind == tokPunct && t.text[0] == c
}

// parseHost splits a DB_HOST value into host, port and socket.
func parseHost(dbHost string) (host string, port int, socket string, err error) {
	port = DefaultPort
	h := strings.TrimSpace(dbHost)
	switch {
	case h == "":
		return "localhost", port, "", nil
	case strings.HasPrefix(h, "/"):
		return "", port, h, nil
	}
	// host:/path/to.sock (also [::1]:/path/to.sock): the socket wins.
	if i := strings.Index(h, ":/"); i >= 0 {
		return "", port, h[i+1:], nil
	}

	var portText string
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", 0, "", fmt.Errorf("invalid DB_HOST %q: missing ']' after IPv6 address", dbHost)
		}
		host, rest := h[1:end], h[end+1:]
		if host == "" {
			return "", 0, "", fmt.Errorf("invalid DB_HOST %q: empty IPv6 address", dbHost)
		}
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", 0, "", fmt.Errorf("invalid DB_HOST %q: unexpected %q after IPv6 address", dbHost, rest)
			}
			portText = p
		}
		h = host
	case strings.Count(h, ":") > 1:
		// A bare IPv6 address such as ::1; it cannot carry a port.
		return h, port, "", nil
	default:
		h, portText, _ = strings.Cut(h, ":")
		if h == "" {
			h = "localhost"
		}
	}
	if portText != "" {
		n, err := strconv.Atoi(portText)
		if err != nil || n < 1 || n > 65535 || portText[0] == '+' || portText[0] == '-' {
			return "", 0, "", fmt.Errorf("invalid DB_HOST %q: port %q is not a number from 1 to 65535", dbHost, portText)
		}
		port = n
	}
	return h, port, "", nil
}
