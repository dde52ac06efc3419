package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	storedriver "github.com/queuety/queuety-go/store/driver"
)

// recheckAfter is how long a pooled connection of a multi-host DSN goes
// between health checks of its server: when the pool hands it out again
// that long after the last check, its server is checked once more, and a
// connection to a server that has left the synced state is closed instead
// of used.
const recheckAfter = 2 * time.Second

// failoverConnector makes each new connection of a multi-host DSN to the
// first healthy server, trying the servers in the DSN's order starting
// from the one the last connection went to: connections stay on one
// server while it is healthy, and move on, in order, when it is not.
type failoverConnector struct {
	hosts      []string
	connectors []driver.Connector
	// last is the index of the server the last good connection went to.
	last atomic.Int32
}

// newFailoverConnector returns a connector over dc with its address
// replaced by each of hosts in turn.
func newFailoverConnector(dc *gomysql.Config, hosts []string) (*failoverConnector, error) {
	fc := &failoverConnector{hosts: hosts}
	firstHost, _, _ := net.SplitHostPort(dc.Addr)
	for _, h := range hosts {
		hc := dc.Clone()
		hc.Addr = h
		if hc.TLS != nil && hc.TLS.ServerName == firstHost && firstHost != "" {
			// The driver named the first server in the TLS config: each
			// server is verified against its own name.
			hc.TLS.ServerName, _, _ = net.SplitHostPort(h)
		}
		conn, err := gomysql.NewConnector(hc)
		if err != nil {
			return nil, fmt.Errorf("configure driver: %w", err)
		}
		if hc.InterpolateParams {
			conn = checkedConnector{conn}
		}
		fc.connectors = append(fc.connectors, conn)
	}
	return fc, nil
}

// Driver implements driver.Connector.
func (fc *failoverConnector) Driver() driver.Driver { return fc.connectors[0].Driver() }

// noHealthyServer is the error of a connection no server of a
// multi-host DSN would take: each server's error, in the order tried.
type noHealthyServer struct {
	hosts []string
	errs  []error
}

func (e *noHealthyServer) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("no healthy server among %d (%s): %s", len(e.hosts), strings.Join(e.hosts, ","), strings.Join(msgs, "; "))
}

func (e *noHealthyServer) Unwrap() []error { return e.errs }

// Connect implements driver.Connector: it connects to the first server,
// from the last good one on, that answers and is healthy (see checkHealth).
func (fc *failoverConnector) Connect(ctx context.Context) (driver.Conn, error) {
	n := len(fc.connectors)
	start := int(fc.last.Load())
	errs := make([]error, 0, n)
	for i := range n {
		h := (start + i) % n
		conn, err := fc.connectors[h].Connect(ctx)
		if err == nil {
			if err = checkHealth(ctx, conn); err != nil {
				conn.Close()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fc.hosts[h], err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fc.last.Store(int32(h))
		return &failoverConn{conn: conn, checked: time.Now()}, nil
	}
	return nil, &noHealthyServer{hosts: fc.hosts, errs: errs}
}

// errUnhealthy is the error of a server that answers but must not be
// used.
var errUnhealthy = errors.New("server is not a synced cluster member")

// checkHealth checks that conn's server takes queries: a server without
// Galera (MySQL, or MariaDB with no wsrep provider) does when it answers;
// a Galera node must be ready (wsrep_ready=ON), synced
// (wsrep_local_state=4) and must not refuse client queries
// (wsrep_reject_queries=NONE).
func checkHealth(ctx context.Context, conn driver.Conn) error {
	status, err := showGlobal(ctx, conn, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_provider_name', 'wsrep_ready', 'wsrep_local_state')")
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if status["wsrep_provider_name"] == "" {
		return nil // not a Galera node
	}
	if status["wsrep_ready"] != "ON" {
		return fmt.Errorf("%w: wsrep_ready is %s", errUnhealthy, status["wsrep_ready"])
	}
	if status["wsrep_local_state"] != "4" {
		return fmt.Errorf("%w: wsrep_local_state is %s, not 4 (Synced)", errUnhealthy, status["wsrep_local_state"])
	}
	vars, err := showGlobal(ctx, conn, "SHOW GLOBAL VARIABLES WHERE Variable_name = 'wsrep_reject_queries'")
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if v := vars["wsrep_reject_queries"]; v != "" && v != "NONE" {
		return fmt.Errorf("%w: wsrep_reject_queries is %s", errUnhealthy, v)
	}
	return nil
}

// showGlobal runs a SHOW ... WHERE Variable_name ... statement on conn and
// returns its rows by lower-case name.
func showGlobal(ctx context.Context, conn driver.Conn, query string) (map[string]string, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("the driver cannot run a query on a raw connection")
	}
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	v := make([]driver.Value, 2)
	for {
		if err := rows.Next(v); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		out[strings.ToLower(asString(v[0]))] = asString(v[1])
	}
}

func asString(v driver.Value) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// failoverConn is a connection of a multi-host DSN. It is given up (the
// pool closes it and opens another, to a healthy server) once a statement
// on it met error 1047, a Galera node that has left the synced primary
// component, and when its server fails the health check the pool runs
// before handing it out again once the last check is recheckAfter old.
type failoverConn struct {
	conn driver.Conn
	// bad is set once a statement met error 1047.
	bad     atomic.Bool
	checked time.Time
}

// note records err's meaning for the connection and returns it.
func (c *failoverConn) note(err error) error {
	if err != nil && errNumber(err) == 1047 {
		c.bad.Store(true)
	}
	return err
}

// Prepare implements driver.Conn.
func (c *failoverConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext.
func (c *failoverConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.conn.Prepare(query)
	}
	if err != nil {
		return nil, c.note(err)
	}
	return &failoverStmt{Stmt: st, c: c}, nil
}

// Close implements driver.Conn.
func (c *failoverConn) Close() error { return c.conn.Close() }

// Begin implements driver.Conn.
func (c *failoverConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *failoverConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errors.New("the driver has no BeginTx")
	}
	tx, err := b.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.note(err)
	}
	return failoverTx{tx: tx, c: c}, nil
}

// ExecContext implements driver.ExecerContext.
func (c *failoverConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.ExecContext(ctx, query, args)
	return r, c.note(err)
}

// QueryContext implements driver.QueryerContext.
func (c *failoverConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := q.QueryContext(ctx, query, args)
	return r, c.note(err)
}

// Ping implements driver.Pinger.
func (c *failoverConn) Ping(ctx context.Context) error {
	if p, ok := c.conn.(driver.Pinger); ok {
		return c.note(p.Ping(ctx))
	}
	return nil
}

// CheckNamedValue implements driver.NamedValueChecker.
func (c *failoverConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession implements driver.SessionResetter: the pool calls it before
// it hands out a connection used before.
func (c *failoverConn) ResetSession(ctx context.Context) error {
	if c.bad.Load() {
		return driver.ErrBadConn
	}
	if r, ok := c.conn.(driver.SessionResetter); ok {
		if err := r.ResetSession(ctx); err != nil {
			return err
		}
	}
	if time.Since(c.checked) >= recheckAfter {
		if err := checkHealth(ctx, c.conn); err != nil {
			c.bad.Store(true)
			return driver.ErrBadConn
		}
		c.checked = time.Now()
	}
	return nil
}

// IsValid implements driver.Validator: the pool keeps a returned
// connection only while it is valid.
func (c *failoverConn) IsValid() bool {
	if c.bad.Load() {
		return false
	}
	if v, ok := c.conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// failoverTx is a transaction on a failoverConn.
type failoverTx struct {
	tx driver.Tx
	c  *failoverConn
}

// Commit implements driver.Tx.
func (t failoverTx) Commit() error { return t.c.note(t.tx.Commit()) }

// Rollback implements driver.Tx.
func (t failoverTx) Rollback() error { return t.c.note(t.tx.Rollback()) }

// failoverStmt is a prepared statement on a failoverConn.
type failoverStmt struct {
	driver.Stmt
	c *failoverConn
}

// Exec implements driver.Stmt.
func (s *failoverStmt) Exec(args []driver.Value) (driver.Result, error) {
	r, err := s.Stmt.Exec(args) //nolint:staticcheck // the interface requires it
	return r, s.c.note(err)
}

// Query implements driver.Stmt.
func (s *failoverStmt) Query(args []driver.Value) (driver.Rows, error) {
	r, err := s.Stmt.Query(args) //nolint:staticcheck // the interface requires it
	return r, s.c.note(err)
}

// ExecContext implements driver.StmtExecContext.
func (s *failoverStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("the driver has no StmtExecContext")
	}
	r, err := e.ExecContext(ctx, args)
	return r, s.c.note(err)
}

// QueryContext implements driver.StmtQueryContext.
func (s *failoverStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("the driver has no StmtQueryContext")
	}
	r, err := q.QueryContext(ctx, args)
	return r, s.c.note(err)
}

// CheckNamedValue implements driver.NamedValueChecker.
func (s *failoverStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}

// splitHosts splits the host list of a mysql:// DSN,
// host[:port][,host[:port]...], into addresses; one host is a list of
// one.
func splitHosts(list string) ([]string, error) {
	if !strings.Contains(list, ",") {
		host, port, err := splitHostPort(list)
		if err != nil {
			return nil, err
		}
		return []string{netJoin(host, port)}, nil
	}
	var out []string
	for i, hp := range strings.Split(list, ",") {
		if hp == "" {
			return nil, fmt.Errorf("%w: host %d of the DSN's host list is empty", storedriver.ErrInvalidArgument, i+1)
		}
		host, port, err := splitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("%w (host %d of the DSN's host list)", err, i+1)
		}
		out = append(out, netJoin(host, port))
	}
	return out, checkDistinct(out)
}

// checkDistinct refuses a host list naming one address twice.
func checkDistinct(hosts []string) error {
	seen := map[string]int{}
	for i, h := range hosts {
		if j, ok := seen[h]; ok {
			return fmt.Errorf("%w: hosts %d and %d of the DSN's host list are the same address", storedriver.ErrInvalidArgument, j+1, i+1)
		}
		seen[h] = i
	}
	return nil
}

// splitDriverHosts finds the address of a go-sql-driver DSN the way the
// driver does (the '(' after the last '@' before the last '/', up to the
// ')' before that '/') and, when it is a tcp address list
// (tcp(h1:3306,h2:3306)), returns the DSN with the first address only and
// the list, each address given a port as the driver would (3306).
func splitDriverHosts(base string) (string, []string, error) {
	i := strings.LastIndexByte(base, '/')
	if i <= 0 {
		return base, nil, nil
	}
	j := strings.LastIndexByte(base[:i], '@')
	k := strings.IndexByte(base[j+1:i], '(')
	if k < 0 || base[i-1] != ')' {
		return base, nil, nil
	}
	k += j + 1
	netName, addr := base[j+1:k], base[k+1:i-1]
	if !strings.Contains(addr, ",") {
		return base, nil, nil
	}
	if netName != "tcp" {
		return "", nil, fmt.Errorf("%w: a DSN lists several addresses only for tcp", storedriver.ErrInvalidArgument)
	}
	var hosts []string
	for n, a := range strings.Split(addr, ",") {
		if a == "" {
			return "", nil, fmt.Errorf("%w: host %d of the DSN's host list is empty", storedriver.ErrInvalidArgument, n+1)
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			// No port: a name, an IPv4 address, or an IPv6 address, with
			// or without brackets, as the driver reads one.
			host, port = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), "3306"
			if ip, _, _ := strings.Cut(host, "%"); strings.Contains(host, ":") && net.ParseIP(ip) == nil {
				host = ""
			}
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || port[0] < '0' || port[0] > '9' {
			return "", nil, fmt.Errorf("%w: host %d of the DSN's host list: the port must be a number from 1 to 65535", storedriver.ErrInvalidArgument, n+1)
		}
		if host == "" || strings.ContainsAny(host, "[]()@/ ") {
			return "", nil, fmt.Errorf("%w: host %d of the DSN's host list has no valid host name", storedriver.ErrInvalidArgument, n+1)
		}
		hosts = append(hosts, net.JoinHostPort(host, port))
	}
	if err := checkDistinct(hosts); err != nil {
		return "", nil, err
	}
	return base[:k+1] + hosts[0] + base[i-1:], hosts, nil
}
