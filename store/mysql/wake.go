package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/sqlstore"
)

// The store wakes idle workers of other processes when it commits jobs
// (driver.JobNotifier), as PostgreSQL's LISTEN/NOTIFY does, with an
// interrupted sleep: MySQL and MariaDB have no message channel, but a
// session may interrupt the statements of its own user's other sessions.
//
// A listening process keeps one connection of its own, outside the pool,
// in SELECT SLEEP(listenSleep) under a statement text that names its
// database and jobs table (listenSQL) and ends in its store's token
// (wakeSQL). A process that committed jobs reads, on one pooled
// connection, the ids and texts of the sessions running a text that
// starts so (information_schema.PROCESSLIST) and interrupts them there
// with KILL QUERY: the sleep ends at once, and the listener wakes its
// process's workers and sleeps again. A send leaves alone the listeners
// whose text ends in its own token: the store's own (its workers are
// woken in-process, and a wake-up of its own is no news of another
// process) and those of the stores that share its wake key (wakeown.go),
// so a process that works alone finds no listener and sends about once a
// second (notifyQuiet). The token is random, so a send knows its own
// listeners on whichever server they run, on a Galera cluster or with a
// DSN naming several servers, and never takes another process's for its
// own, however alike the servers look. An idle listener costs one
// statement per listenSleep; a commit costs one read and one KILL per
// listening process, in the background, one send in flight per process
// and the rest coalesced (internal/engine), at most one per notifyGap.
//
// Why this and not the alternatives: a wake-up row the claim reads is
// still bounded by the poll interval; a GET_LOCK hand-off needs a waker
// that holds a lock for the listeners and can only let them go by
// releasing it from its own session, so a dispatching process cannot
// release it. The processlist rather than a table of listener ids: no
// migration, no rows left behind by a process that died, and no id that
// could name another session: an id is killed only after it was seen, on
// the same connection (the same server: a KILL reaches only sessions of
// the server it runs on), running a listener's statement, and a server
// never gives one id twice in its lifetime. It is also the privilege
// boundary: without PROCESS a session sees exactly its own user's
// sessions, and a user may KILL those without SUPER or CONNECTION_ADMIN.
//
// On a Galera cluster the processlist and KILL are node-local, so a send
// reaches each node on a connection to that node (wakenodes.go): with a
// DSN naming several servers, on one connection of its own to each of
// them, and with a single-host DSN on the pool for the pool's server;
// either way on one connection of its own to each other node that
// wsrep_incoming_addresses names (read on the pool, again every minute;
// the server's own entry is the one at wsrep_local_index; an entry that
// resolves to a server the DSN names is that server, under the DSN's
// name). Those
// connections use the DSN's credentials and TLS settings (a TLS server
// name that named the DSN's host names the node's) and wsrep_sync_wait=1,
// so the read of a node's listeners waits until the node has applied the
// commit and a woken worker's claim sees the jobs. The nodes are sent to
// concurrently; a send waits for their answers at most nodeWait, a node
// still busy with a send gets one more when it ends instead of another
// alongside, and a node whose read failed is left out for a second,
// doubling up to 30 s, so a node that is down or hangs holds up none of
// the others. The rule of the id stays: each id is killed on the
// connection, to one server, on which it was seen. The quiet rule counts
// the listeners found on every node. A server without Galera costs what
// it did: one read and its KILLs on one pooled connection.
//
// Everything else falls back to polling: listeners of another user (not
// visible, or KILL refused), listeners on a node the sender cannot reach
// (an address of wsrep_incoming_addresses that is AUTO, unspecified or
// not routable from the client), a listener reconnecting after its connection was
// lost (1 s, doubling up to 30 s; it claims once when it is back), and
// Queuety PHP's dispatches, which send nothing. Behind a proxy that
// multiplexes client connections over server ones, the read and the KILL
// could reach different servers: wake=false turns the wake-up off.

// listenSleep is how long one listening statement sleeps; the listener
// then starts the next one.
const listenSleep = 20

// notifyGap is the least time between two sends of one store, so a stream
// of commits costs at most one read and one KILL per listener each gap.
const notifyGap = 5 * time.Millisecond

// notifyQuiet is the least time between two sends of one store once its
// sends have found no listener for quietAfter: a process that commits
// with no listener anywhere reads the processlist about once a second.
const notifyQuiet = time.Second

// quietAfter is how long the sends of a store may find no listener before
// it sends only every notifyQuiet. A single read that finds none says
// little: a listener is missing between two of its sleeps, and a worker
// that has just started (or restarted) claims before its listener is live;
// holding back the commits that follow for a second would delay their
// wake-up. A listener that appears later is woken within notifyQuiet.
const quietAfter = 2 * time.Second

// wakeState is the store's wake-up state.
type wakeState struct {
	// sql is the head of the listeners' statement (listenSQL): the
	// statement of a listener of the same tables starts with it.
	sql string
	// cluster is set on a Galera cluster: a send reaches every node.
	cluster *wakeCluster

	mu       sync.Mutex
	lastSend time.Time
	missed   time.Time // the first of the sends since the last that found a listener (or failed) to find none; zero: the last found one
	warned   bool
	log      *slog.Logger // SetLogger; nil: slog.Default()
	// token marks this store's own listeners (wakeown.go); empty until
	// the store first listens or sends, or ShareWake.
	token string
}

// SetLogger implements driver.LogSetter: the listener logs the first loss
// of its connection to l.
func (s *Store) SetLogger(l *slog.Logger) {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	s.wake.log = l
}

// safeName is a database or table name that may stand in a string
// literal as it is.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_$.-]{1,160}$`)

// listenSQL is the head of the listener's statement for a database and
// its tables: its text names the jobs table, so a commit wakes only the
// listeners of the same tables. The statement adds the store's token
// (wakeSQL).
func listenSQL(db string, n sqlstore.Names) string {
	tag := db + "." + n.Table("jobs")
	if !safeName.MatchString(tag) {
		sum := sha256.Sum256([]byte(tag))
		tag = hex.EncodeToString(sum[:16])
	}
	return "SELECT SLEEP(" + strconv.Itoa(listenSleep) + ") AS queuety_go_wake, '" + tag + "' AS jobs_table"
}

// sendWait is how long a send at now waits after the last one (at
// lastSend) when the sends have found no listener since missed (zero: the
// last found one): notifyGap after the last send, or notifyQuiet once
// they have found none for quietAfter.
func sendWait(now, lastSend, missed time.Time) time.Duration {
	if lastSend.IsZero() {
		return 0
	}
	gap := notifyGap
	if !missed.IsZero() && now.Sub(missed) >= quietAfter {
		gap = notifyQuiet
	}
	return gap - now.Sub(lastSend)
}

// NotifyJobs implements driver.JobNotifier: it interrupts the sleep of
// every listener of this store's tables it can see on one connection, or
// on a Galera cluster on one connection to each node. A listener that
// ended between the read and the KILL is skipped.
func (s *Store) NotifyJobs(ctx context.Context) error {
	if s.cfg.NoWake {
		return nil
	}
	s.wake.mu.Lock()
	wait := sendWait(time.Now(), s.wake.lastSend, s.wake.missed)
	s.wake.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return nil
		case <-t.C:
		}
	}
	heard := true // a failed read says nothing of the listeners
	defer func() {
		s.wake.mu.Lock()
		now := time.Now()
		s.wake.lastSend = now
		switch {
		case heard:
			s.wake.missed = time.Time{}
		case s.wake.missed.IsZero():
			s.wake.missed = now
		}
		s.wake.mu.Unlock()
	}()
	if s.wake.cluster != nil {
		found, answered, err := s.notifyCluster(ctx)
		heard = found || !answered
		return err
	}
	found, read, err := notifyOn(ctx, s.DB, s.wake.sql, s.ownToken())
	if read {
		heard = found > 0
	}
	return err
}

// notifyCluster sends to the nodes of a Galera cluster: on the pool for a
// single-host DSN, and on a connection to each other node. It waits for
// the other nodes' answers at most nodeWait. It reports whether a send
// found a listener, and whether any read of the listeners answered.
func (s *Store) notifyCluster(ctx context.Context) (found, answered bool, err error) {
	wc := s.wake.cluster
	first := wc.refresh(ctx, s.DB)
	own := s.ownToken()
	results, started := wc.send(s.wake.sql, own, func() {
		s.wake.mu.Lock()
		s.wake.missed = time.Time{}
		s.wake.mu.Unlock()
	})
	deadline := time.NewTimer(nodeWait)
	defer deadline.Stop()
	if !wc.fixed {
		k, read, err := notifyOn(ctx, s.DB, s.wake.sql, own)
		found, answered = k > 0, read
		if err != nil {
			first = err
		}
	}
	for range started {
		select {
		case r := <-results:
			found = found || r.found > 0
			answered = answered || r.read
			if r.err != nil && first == nil {
				first = fmt.Errorf("notify: %w", r.err)
			}
		case <-deadline.C:
			return found, answered, first
		case <-ctx.Done():
			return found, answered, first
		}
	}
	return found, answered, first
}

// notifyOn interrupts the listeners whose statement starts with head
// that a connection of db reads, on that connection, but those of token
// (this store's own). It reports how many it found besides its own and
// whether the read succeeded.
func notifyOn(ctx context.Context, db *sql.DB, head, token string) (found int, read bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("notify: %w", err)
	}
	defer conn.Close()
	ids, err := listenerIDs(ctx, conn, head, token)
	if err != nil {
		return 0, false, err
	}
	var first error
	for _, id := range ids {
		_, err := conn.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(id, 10))
		if err != nil && errNumber(err) != 1094 && first == nil { // 1094: unknown thread, it just ended
			first = fmt.Errorf("notify: interrupt listener %d: %w", id, err)
		}
	}
	return len(ids), true, first
}

// listenerIDs reads the ids of the sessions on conn's server running a
// listener's statement that starts with head, but those of token. The
// read's own statement does not start with head, so it is never among
// them.
func listenerIDs(ctx context.Context, conn *sql.Conn, head, token string) ([]int64, error) {
	rows, err := conn.QueryContext(ctx,
		"SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE LEFT(INFO, ?) = ? AND COMMAND = 'Query'", len(head), head)
	if err != nil {
		return nil, fmt.Errorf("notify: read listeners: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var info string
		if err := rows.Scan(&id, &info); err != nil {
			return nil, fmt.Errorf("notify: read listeners: %w", err)
		}
		if t, ok := listenerToken(head, info); ok && t != token {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("notify: read listeners: %w", err)
	}
	return ids, nil
}

// ListenJobs implements driver.JobNotifier: it sleeps on a connection of
// its own, outside the pool, and calls wake when a sleep is interrupted.
// It reconnects (after 1 s, doubling up to 30 s) when the connection is
// lost, logging the first loss at warn level on the client's logger
// (SetLogger); it returns when ctx ends or the store is closed. With wake=false it returns at once.
func (s *Store) ListenJobs(ctx context.Context, wake func()) error {
	return s.ListenJobsLive(ctx, wake, func(bool) {})
}

// ListenJobsLive implements driver.LiveJobNotifier: ListenJobs, reporting
// live(true) while its connection sleeps to be woken and live(false) when
// the connection is lost and when it returns. With wake=false it returns
// at once, never live.
func (s *Store) ListenJobsLive(ctx context.Context, wake func(), live func(bool)) error {
	if s.cfg.NoWake {
		return nil
	}
	defer live(false)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := time.Second
	for {
		started := time.Now()
		err := s.listen(ctx, wake, live)
		live(false)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		s.wake.mu.Lock()
		warn := !s.wake.warned
		s.wake.warned = true
		log := s.wake.log
		s.wake.mu.Unlock()
		if log == nil {
			log = slog.Default()
		}
		if warn {
			log.Warn("queuety: mysql wake-up listener lost its connection; idle workers poll until it reconnects",
				"err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// listen runs one listening connection until it fails or ctx ends.
func (s *Store) listen(ctx context.Context, wake func(), live func(bool)) error {
	db, err := openDB(s.dc, s.cfg.Hosts)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		return fmt.Errorf("listen: ping: %w", err)
	}
	stmt := wakeSQL(s.wake.sql, s.ownToken())
	live(true)
	wake() // what was committed while no listener slept was heard by none
	for {
		// The deadline outlasts the sleep, so a server that vanished
		// without closing the connection is noticed.
		sctx, cancel := context.WithTimeout(ctx, (listenSleep+10)*time.Second)
		var done int64
		err := conn.QueryRowContext(sctx, stmt).Scan(&done, new(string), new(string))
		cancel()
		switch {
		case err == nil && done == 0: // slept to the end
		case err == nil, errNumber(err) == 1317: // interrupted: MySQL returns 1, MariaDB error 1317
			wake()
		case ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("listen: %w", err)
		}
	}
}
