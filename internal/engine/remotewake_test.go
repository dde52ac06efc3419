package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
)

// failingNotifier is a driver.JobNotifier whose sends all fail; each send
// is reported on sent.
type failingNotifier struct{ sent chan struct{} }

func (f failingNotifier) NotifyJobs(context.Context) error {
	f.sent <- struct{}{}
	return errors.New("interrupt listener 7: Error 1095: You are not owner of thread 7")
}

func (f failingNotifier) ListenJobs(ctx context.Context, _ func()) error {
	<-ctx.Done()
	return nil
}

// TestRemoteWakeLogsFirstFailureOnce: a send that fails costs the other
// processes a poll, and is logged once at debug level, not once per
// commit.
func TestRemoteWakeLogsFirstFailureOnce(t *testing.T) {
	var out syncbuf.Buffer
	n := failingNotifier{sent: make(chan struct{})}
	r := &remoteWake{n: n, log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for range 3 {
		r.notify()
		select {
		case <-n.sent:
		case <-time.After(30 * time.Second):
			t.Fatal("no send within 30 s")
		}
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.sending
	}, 30*time.Second, time.Millisecond)
	logged := out.String()
	require.Equal(t, 1, strings.Count(logged, "waking other processes failed"), logged)
	require.Contains(t, logged, "level=DEBUG")
	require.Contains(t, logged, "not owner of thread")
}
