package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestWorkRetentionFlags: bad retention values are usage errors that name
// the flag and what it takes.
func TestWorkRetentionFlags(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--retain-completed", "soon"}, `invalid retention "soon" (want a number of days, a duration such as 12h or 7d, or forever)`},
		{[]string{"--retain-workflows", "-3d"}, `invalid retention "-3d"`},
		{[]string{"--retain-logs", "10s"}, "keep rows at least a minute, or forever"},
		{[]string{"--retention", "maybe"}, `--retention must be on or off, got "maybe"`},
		{[]string{"--retention", "off", "--retain-buried", "30d"}, "--retain-buried has no effect with --retention off"},
		{[]string{"--retention-interval", "0s"}, "--retention-interval must be at least 1s"},
		{[]string{"--retention-batch", "0"}, "--retention-batch must be from 1 to 10000, got 0"},
	} {
		wantFail(t, 2, c.want, append([]string{"--dsn", dsn, "work"}, c.args...)...)
	}
}

// TestWorkRetentionDeletesOldRows: a worker started with the CLI deletes
// a job completed longer ago than --retain-completed at start, logs it,
// and keeps a younger one; with --retention off it deletes nothing.
func TestWorkRetentionDeletesOldRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queuety.db")
	dsn := "sqlite://" + path
	mustRun(t, nil, "--dsn", dsn, "migrate")
	old := dispatchID(t, dsn, "h")
	recent := dispatchID(t, dsn, "h")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	now := time.Now().UTC()
	for id, at := range map[int64]time.Time{old: now.Add(-4 * 24 * time.Hour), recent: now.Add(-2 * 24 * time.Hour)} {
		_, err := db.Exec("UPDATE queuety_jobs SET status = 'completed', completed_at = ? WHERE id = ?", at.Format("2006-01-02 15:04:05"), id)
		require.NoError(t, err)
	}
	work := func(clean bool, args ...string) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var errOut syncbuf.Buffer
		done := make(chan int, 1)
		go func() {
			done <- cli.Run(ctx, append([]string{"work", "--dsn", dsn}, args...), nil, &bytes.Buffer{}, &errOut)
		}()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(errOut.String(), "worker started") || clean && !strings.Contains(errOut.String(), "retention pass") {
			require.False(t, time.Now().After(deadline), "worker did not start or clean:\n%s", errOut.String())
			select {
			case code := <-done:
				require.FailNow(t, "work exited early", "exit %d:\n%s", code, errOut.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		assert.Equal(t, 0, <-done, "work exit code:\n%s", errOut.String())
		return errOut.String()
	}
	c := openClient(t, dsn)
	work(false, "--retention", "off")
	_, err = c.Job(context.Background(), old)
	require.NoError(t, err, "--retention off deleted the old job")

	logs := work(true, "--retain-completed", "3d")
	assert.Contains(t, logs, "completed_jobs=1", "the cleaner's log line")
	_, err = c.Job(context.Background(), old)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "the job completed 4 days ago is gone")
	_, err = c.Job(context.Background(), recent)
	assert.NoError(t, err, "the job completed 2 days ago stays")
}
