package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// On a Galera cluster the processlist and KILL are node-local, so a send
// reads and interrupts the listeners of each node on a connection to that
// node (see the comment in wake.go).

// nodesRefresh is how often a store reads the cluster's nodes again
// (wsrep_incoming_addresses).
const nodesRefresh = time.Minute

// nodesRetry is how soon a store reads the nodes again after a read
// failed.
const nodesRetry = 5 * time.Second

// nodeTimeout bounds one send to one node: connecting, the read and the
// KILLs. The read is causal (wsrep_sync_wait): while the cluster stalls
// on a member that stopped answering, it waits until the member is
// evicted (evs.suspect_timeout, 5 s by default), and then wakes the
// listeners for the jobs committed before.
const nodeTimeout = 15 * time.Second

// nodeRetry is how long a node whose read of the listeners failed is
// left out of the sends, doubling with each failure in a row up to
// nodeRetryMax: its listeners poll meanwhile, and an address the client
// cannot reach costs a connection attempt at most that often.
const (
	nodeRetry    = time.Second
	nodeRetryMax = 30 * time.Second
)

// nodeWait is how long a send waits for the other nodes' answers before
// it returns; a slower node's send goes on, and the next sends leave the
// node out until it ends, so a node that hangs holds up no other.
const nodeWait = 250 * time.Millisecond

// wakeCluster is a store's view of the nodes of its Galera cluster for
// the wake-up.
type wakeCluster struct {
	dc *gomysql.Config
	// fixed is set for a multi-host DSN: its servers, named, are nodes
	// sent to on connections of their own for as long as the store is
	// open, and the pool is not sent on. Otherwise the pool's server is
	// sent to on the pool. Either way the other nodes are read from
	// wsrep_incoming_addresses.
	fixed bool
	named []string
	// base ends when the store closes; the sends to the nodes run under it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	nodes    map[string]*wakeNode
	nextRead time.Time // when to read the nodes again
}

// wakeNode is one node the wake-up sends to on a connection of its own.
type wakeNode struct {
	addr string
	db   *sql.DB // one connection, with wsrep_sync_wait=1
	// busy is set while a send to the node runs; again, when another was
	// asked for meanwhile: the send then runs once more.
	busy, again bool
	retryAt     time.Time     // after a failed send
	backoff     time.Duration // the next wait after a failure; zero: nodeRetry
}

// nodeResult is the outcome of one send to one node.
type nodeResult struct {
	addr  string
	found int  // listeners found
	read  bool // the read of the listeners succeeded
	err   error
}

// newWakeCluster returns the wake-up's view of the cluster dc's servers
// (hosts, when the DSN names several) belong to.
func newWakeCluster(dc *gomysql.Config, hosts []string) (*wakeCluster, error) {
	wc := &wakeCluster{dc: dc, nodes: map[string]*wakeNode{}}
	wc.base, wc.cancel = context.WithCancel(context.Background())
	if len(hosts) > 1 {
		wc.fixed, wc.named = true, hosts
		for _, h := range hosts {
			n, err := wc.newNode(h)
			if err != nil {
				wc.close()
				return nil, err
			}
			wc.nodes[h] = n
		}
	}
	return wc, nil
}

// newNode opens the wake-up's connection to the node at addr: dc's
// configuration with its address, a TLS server name that named dc's
// server naming addr's, and wsrep_sync_wait=1, so the read of the
// listeners waits until the node has applied the commit it is sent for
// and a woken worker's claim sees the jobs.
func (wc *wakeCluster) newNode(addr string) (*wakeNode, error) {
	hc := wc.dc.Clone()
	hc.Net, hc.Addr = "tcp", addr
	firstHost, _, _ := net.SplitHostPort(wc.dc.Addr)
	if hc.TLS != nil && hc.TLS.ServerName == firstHost && firstHost != "" {
		hc.TLS.ServerName, _, _ = net.SplitHostPort(addr)
	}
	if hc.Params == nil {
		hc.Params = map[string]string{}
	}
	hc.Params["wsrep_sync_wait"] = "1"
	db, err := openDB(hc, nil)
	if err != nil {
		return nil, fmt.Errorf("wake-up connection to %s: %w", addr, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(30 * time.Minute)
	return &wakeNode{addr: addr, db: db}, nil
}

// close closes the connections to the nodes; sends under way end.
func (wc *wakeCluster) close() {
	wc.cancel()
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for _, n := range wc.nodes {
		go n.db.Close() // waits for a send under way, which base has ended
	}
	wc.nodes = map[string]*wakeNode{}
}

// refresh reads the cluster's other nodes when they are due to be read,
// on pool. With a multi-host DSN, the nodes are its servers and those of
// the others that are none of them (unnamedNodes).
func (wc *wakeCluster) refresh(ctx context.Context, pool *sql.DB) error {
	wc.mu.Lock()
	due := !time.Now().Before(wc.nextRead)
	if due {
		wc.nextRead = time.Now().Add(nodesRetry)
	}
	wc.mu.Unlock()
	if !due {
		return nil
	}
	addrs, err := otherNodes(ctx, pool)
	if err != nil {
		return err
	}
	if wc.fixed {
		addrs = unnamedNodes(ctx, wc.named, addrs, net.DefaultResolver.LookupHost)
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.base.Err() != nil {
		return nil
	}
	wc.nextRead = time.Now().Add(nodesRefresh)
	keep := map[string]*wakeNode{}
	for _, a := range wc.named {
		keep[a] = wc.nodes[a]
	}
	var first error
	for _, a := range addrs {
		if n, ok := wc.nodes[a]; ok {
			keep[a] = n
			continue
		}
		n, err := wc.newNode(a)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		keep[a] = n
	}
	for a, n := range wc.nodes {
		if keep[a] == nil {
			go n.db.Close()
		}
	}
	wc.nodes = keep
	return first
}

// otherNodes reads the client addresses of the cluster's nodes but the
// one of db's server: wsrep_incoming_addresses lists them in the order of
// the cluster's members, wsrep_local_index is the server's place in it.
// An address that names no host to connect to (AUTO, an unspecified
// address, no port) is left out: the listeners there poll.
func otherNodes(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_incoming_addresses', 'wsrep_local_index')")
	if err != nil {
		return nil, fmt.Errorf("notify: read the cluster's nodes: %w", err)
	}
	defer rows.Close()
	var list string
	self := -1
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("notify: read the cluster's nodes: %w", err)
		}
		if strings.EqualFold(name, "wsrep_local_index") {
			if self, err = strconv.Atoi(value); err != nil {
				return nil, fmt.Errorf("notify: read the cluster's nodes: wsrep_local_index is %q", value)
			}
		} else {
			list = value
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("notify: read the cluster's nodes: %w", err)
	}
	if self < 0 {
		return nil, errors.New("notify: read the cluster's nodes: the server reports no wsrep_local_index")
	}
	return usableAddresses(list, self), nil
}

// usableAddresses is the addresses of list, a comma-separated
// wsrep_incoming_addresses, but the one at index self and those that name
// no host and port to connect to.
func usableAddresses(list string, self int) []string {
	var out []string
	for i, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if i == self {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" || port == "0" {
			continue
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// unnamedNodes returns the addresses of found, other nodes of the cluster
// as wsrep_incoming_addresses names them, that name neither a server of
// named (a multi-host DSN's) nor an earlier address of found. Two
// addresses name the same server when their ports are the same and their
// hosts share an IP address (lookup resolves a name; a name it cannot
// resolve compares as it is). A server named both ways keeps the DSN's
// name, which its TLS server name follows.
func unnamedNodes(ctx context.Context, named, found []string, lookup func(context.Context, string) ([]string, error)) []string {
	seen := map[string]bool{}
	endpoints := func(addr string) []string {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return []string{strings.ToLower(addr)}
		}
		if ip := net.ParseIP(host); ip != nil {
			return []string{net.JoinHostPort(ip.String(), port)}
		}
		ips, err := lookup(ctx, host)
		if err != nil || len(ips) == 0 {
			return []string{net.JoinHostPort(strings.ToLower(host), port)}
		}
		out := make([]string, 0, len(ips))
		for _, a := range ips {
			if ip := net.ParseIP(a); ip != nil {
				a = ip.String()
			}
			out = append(out, net.JoinHostPort(a, port))
		}
		return out
	}
	for _, a := range named {
		for _, e := range endpoints(a) {
			seen[e] = true
		}
	}
	var out []string
	for _, a := range found {
		dup := false
		for _, e := range endpoints(a) {
			dup = dup || seen[e]
			seen[e] = true
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// send starts a send to every node that is not waiting out a failure and
// returns the channel its results come on and how many were started. A
// node whose last send still runs is not sent to twice: that send runs
// once more when it ends. Each send interrupts the listeners whose
// statement starts with head but those of token (the store's own).
func (wc *wakeCluster) send(head, token string, found func()) (<-chan nodeResult, int) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	now := time.Now()
	results := make(chan nodeResult, len(wc.nodes))
	started := 0
	for _, n := range wc.nodes {
		switch {
		case n.busy:
			n.again = true
		case now.Before(n.retryAt):
		default:
			n.busy = true
			started++
			go wc.run(n, head, token, found, results)
		}
	}
	return results, started
}

// run sends to node n until no other send was asked for meanwhile, and
// reports the first outcome on results; found is called when a send found
// listeners besides those of token.
func (wc *wakeCluster) run(n *wakeNode, head, token string, found func(), results chan<- nodeResult) {
	for first := true; ; first = false {
		ctx, cancel := context.WithTimeout(wc.base, nodeTimeout)
		k, read, err := notifyOn(ctx, n.db, head, token)
		cancel()
		if k > 0 {
			found()
		}
		if first {
			if err != nil {
				err = fmt.Errorf("node %s: %w", n.addr, err)
			}
			results <- nodeResult{addr: n.addr, found: k, read: read, err: err}
		}
		// A read that failed (no connection, a node that refuses queries)
		// sends the node into backoff; a refused KILL (another user's
		// listener, seen with the PROCESS privilege) does not.
		wc.mu.Lock()
		if !read || !n.again || wc.base.Err() != nil {
			n.busy, n.again = false, false
			if !read {
				n.backoff = max(n.backoff, nodeRetry)
				n.retryAt = time.Now().Add(n.backoff)
				n.backoff = min(2*n.backoff, nodeRetryMax)
			} else {
				n.backoff = 0
			}
			wc.mu.Unlock()
			return
		}
		n.again = false
		wc.mu.Unlock()
	}
}
