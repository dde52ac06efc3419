package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb/pgproc"
	"github.com/queuety/queuety-go/queuety"
)

// These tests run a private server (pgproc): they crash it, or need
// password authentication, which the shared server (trust) does not ask
// for.

const privatePassword = "Pg-s3cret-Pw-9f1c"

// waitLog waits until the log holds want.
func waitLog(t *testing.T, b *syncbuf.Buffer, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log has no %q within %s:\n%s", want, within, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListenerLogsOutageAndRecovery: when the server goes away the
// listener says once, at warn, that workers fall back to polling, and
// says so again when it listens once more; neither line holds the
// password.
func TestListenerLogsOutageAndRecovery(t *testing.T) {
	srv := pgproc.Start(t, pgproc.Options{Password: privatePassword})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logs syncbuf.Buffer
	dsn := fmt.Sprintf("postgres://root:%s@127.0.0.1:%d/listen?create=true&sslmode=disable", privatePassword, srv.Port)
	q, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	defer q.Close()
	wake, unsubscribe := clientseam.Engine(q).SubscribeWake()
	defer unsubscribe()
	waitWake(t, ctx, wake, "the listener's first wake-up")

	srv.Crash()
	waitLog(t, &logs, "job notifications lost", time.Minute)
	require.NoError(t, srv.Restart(time.Minute))
	waitLog(t, &logs, "job notifications are back", time.Minute)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "job notifications lost"), "one warning per outage:\n%s", out)
	assert.Contains(t, out, "level=WARN")
	assert.NotContains(t, out, privatePassword)
}

// TestWrongPasswordRefused: a wrong password is refused with an error
// that says so and holds neither the password given nor the right one.
func TestWrongPasswordRefused(t *testing.T) {
	srv := pgproc.Start(t, pgproc.Options{Password: privatePassword})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const wrong = "Wr0ng-Passw0rd-77ab"
	for _, dsn := range []string{
		fmt.Sprintf("postgres://root:%s@127.0.0.1:%d/postgres?sslmode=disable", wrong, srv.Port),
		fmt.Sprintf("postgres://root:%s@127.0.0.1:%d/refused?create=true&sslmode=disable", wrong, srv.Port),
		fmt.Sprintf("postgres://root@127.0.0.1:%d/postgres?sslmode=disable", srv.Port), // none given
	} {
		q, err := queuety.Open(ctx, dsn)
		if err == nil {
			q.Close()
			t.Fatalf("a wrong password was accepted")
		}
		msg := err.Error()
		assert.Contains(t, msg, "password authentication failed", "the error says why")
		assert.NotContains(t, msg, wrong)
		assert.NotContains(t, msg, privatePassword)
	}
	q, err := queuety.Open(ctx, fmt.Sprintf("postgres://root:%s@127.0.0.1:%d/postgres?sslmode=disable", privatePassword, srv.Port))
	require.NoError(t, err, "the right password")
	require.NoError(t, q.Close())
}
