package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The store carries wake-ups between processes with LISTEN/NOTIFY
// (driver.JobNotifier): a process that commits jobs sends a notification
// on the channel of its tables, and the idle workers of every process on
// those tables, each listening on a connection of its own, claim at once
// instead of at their next poll. Polling stays: a notification sent
// while a listener reconnects is missed, and the listener then claims
// once when it is back.
//
// A notification's payload names the store that sent it: its token, 32
// lowercase hex digits drawn at random when the store opens, so each
// store (each Open, in any process) has its own. A listener leaves out
// the notifications its own store sent, as MySQL's send leaves out its
// own store's listeners: the engine woke its process's workers in-process
// as it committed, and a notification of its own is no news of another
// process (the engine reads the highest depends_on early after such
// news). Clients of one process opened on the same DSN share their
// wake-ups in-process (the engine's wake key), so their stores share a
// token too (ShareWake): one drawn per key, once per process. Any other
// payload wakes, the empty one of older versions included.

// channel names the notification channel of a schema and table prefix:
// readable when it fits PostgreSQL's 63 bytes, a hash of them otherwise.
func channel(schema, prefix string) string {
	ch := "queuety_jobs:" + schema + ":" + prefix
	if len(ch) <= maxIdent {
		return ch
	}
	sum := sha256.Sum256([]byte(schema + ":" + prefix))
	return "queuety_jobs:" + hex.EncodeToString(sum[:16])
}

// newToken returns a store's notification token (see above).
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// sharedTokens are the process's tokens by wake key (ShareWake).
var sharedTokens sync.Map // string -> string

// ShareWake implements driver.WakeSharer: the store takes the token of
// key, shared by every store of the process given the same key. It is
// called before the store notifies or listens.
func (s *Store) ShareWake(key string) {
	t, _ := sharedTokens.LoadOrStore(key, newToken())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = t.(string)
}

// notifyToken returns the payload of the store's notifications.
func (s *Store) notifyToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// SetLogger implements driver.LogSetter: the listener logs to l when it
// loses its connection and when it is back.
func (s *Store) SetLogger(l *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l
}

func (s *Store) logger() *slog.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return slog.Default()
	}
	return s.log
}

// NotifyJobs implements driver.JobNotifier.
func (s *Store) NotifyJobs(ctx context.Context) error {
	if _, err := s.DB.ExecContext(ctx, "SELECT pg_notify(?, ?)", s.channel, s.notifyToken()); err != nil {
		return fmt.Errorf("notify %s: %w", s.channel, err)
	}
	return nil
}

// ListenJobs implements driver.JobNotifier: it listens on a connection
// of its own, outside the pool, and reconnects (after 1 s, doubling up to
// 30 s) when the connection is lost. It returns when ctx ends or the
// store is closed.
func (s *Store) ListenJobs(ctx context.Context, wake func()) error {
	return s.ListenJobsLive(ctx, wake, func(bool) {})
}

// ListenJobsLive implements driver.LiveJobNotifier: ListenJobs, reporting
// live(true) once its connection listens and live(false) when the
// connection is lost and when it returns.
func (s *Store) ListenJobsLive(ctx context.Context, wake func(), live func(bool)) error {
	defer live(false)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	backoff := time.Second
	down := false // a failure was logged and no recovery since
	for {
		started := time.Now()
		err := s.listen(ctx, wake, func() {
			live(true)
			if down {
				down = false
				s.logger().Warn("queuety: job notifications are back; workers wake at once again", "channel", s.channel)
			}
		})
		live(false)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		// Polling covers the gap. One warning per outage: the attempts
		// after it report nothing new. pgx's errors name the host and
		// user, never the password.
		if !down {
			down = true
			msg := "unknown"
			if err != nil {
				msg = err.Error()
				if s.cfg.Password != "" {
					msg = strings.ReplaceAll(msg, s.cfg.Password, "xxxxx")
				}
			}
			s.logger().Warn("queuety: job notifications lost; idle workers fall back to polling until the listener reconnects",
				"channel", s.channel, "err", msg)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// listen runs one listening connection until it fails or ctx ends; it
// calls up once it listens.
func (s *Store) listen(ctx context.Context, wake func(), up func()) error {
	pc, err := s.cfg.pgxConfig(s.cfg.Database)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", s.channel, err)
	}
	up()
	wake() // what was committed before the LISTEN sent nothing this connection heard
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen %s: %w", s.channel, err)
		}
		own := n.Payload == s.notifyToken()
		if !own {
			wake()
		}
		if s.heard != nil {
			s.heard(n.Payload, own)
		}
	}
}
