package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestWorkExitsWhenUnhealthy: `work` abandons a handler that ignores its
// cancelled context past --abandon-grace, records its attempt (the job is
// buried by its timeout, on its last attempt), and with more abandoned
// handlers than --max-abandoned exits 1 with an error saying it is
// unhealthy, for a supervisor to restart it.
func TestWorkExitsWhenUnhealthy(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := queuety.NewRegistry()
	reg.HandleJob("t.stuck", func(context.Context, queuety.Payload) error {
		<-release // ignores its context
		return nil
	})
	id, err := openClient(t, dsn).Dispatch(context.Background(), "t.stuck", nil, queuety.StartToClose(time.Second), queuety.MaxAttempts(1))
	require.NoError(t, err)

	r := run(t, reg, "--dsn", dsn, "work", "--concurrency", "1", "--abandon-grace", "50ms", "--max-abandoned", "0")
	assert.Equal(t, 1, r.code, "exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "worker unhealthy", "the unhealthy state is logged")
	assert.Contains(t, r.stderr, "abandoned handlers still running", "the error says why it stopped")
	j, err := openClient(t, dsn).Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "the abandoned attempt was recorded by the timeout path")
}
