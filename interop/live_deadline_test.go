package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

const phpEscalate = `QueuetyGoInterop\Escalate`

// liveDeadlines is a Go client, the PHP driver and the DSN both use, on
// one fresh table prefix.
type liveDeadlines struct {
	t   *testing.T
	c   *queuety.Client
	php *livePHP
	dsn string
}

func newLiveDeadlines(t *testing.T) *liveDeadlines {
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &liveDeadlines{t: t, c: c, php: php, dsn: dsn}
}

// pastDeadline moves a workflow's deadline ten seconds into the past, as
// if it had run that long.
func (l *liveDeadlines) pastDeadline(id int64) {
	l.t.Helper()
	require.NoError(l.t, clientseam.StoreOf(l.c).InTx(context.Background(), func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(context.Background(), id, driver.LockUpdate)
		if err != nil {
			return err
		}
		wf.DeadlineAt = time.Now().UTC().Add(-10 * time.Second).Truncate(time.Second)
		return tx.WorkflowUpdate(context.Background(), wf)
	}))
}

// workOnce runs `queuety-worker work --once` with no Go handlers: an
// operator's cron worker on an unrelated queue still sweeps deadlines.
func (l *liveDeadlines) workOnce() {
	l.t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), []string{"work", "--once", "--dsn", l.dsn, "--queues", "unrelated", "--max-time", "5s"}, nil, &out, &errOut)
	require.Equal(l.t, 0, code, "work --once: %s", errOut.String())
}

// checkDeadlines runs Queuety PHP's deadline sweep and returns how many
// workflows it expired.
func (l *liveDeadlines) checkDeadlines() int {
	l.t.Helper()
	var res struct {
		Expired int `json:"expired"`
	}
	l.php.runJSON(&res, "check-deadlines")
	return res.Expired
}

func (l *liveDeadlines) status(id int64) *driver.Workflow {
	l.t.Helper()
	wf, err := l.c.Workflow(context.Background(), id)
	require.NoError(l.t, err)
	return wf
}

// TestLiveGoSweepLeavesPHPDeadlineHandlerToPHP: Go workers, one with no
// handlers at all (`work --once` from cron) and one that runs the
// workflow's steps, sweep workflows past their deadline whose on_deadline
// is a PHP class. They leave the expiry to PHP (a step claimed late is
// buried, the workflow does not advance), and Queuety PHP's sweep then
// calls each PHP deadline handler exactly once.
func TestLiveGoSweepLeavesPHPDeadlineHandlerToPHP(t *testing.T) {
	ctx := context.Background()
	l := newLiveDeadlines(t)
	marker := filepath.Join(t.TempDir(), "deadline.jsonl")
	l.php.env = append(l.php.env, "QUEUETY_INTEROP_MARKER="+marker)

	goID, err := builder.Workflow("live_deadline_go").
		Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Finish`).
		MustCompleteWithin(0, 0, 1, 0).OnDeadline(phpEscalate).
		Dispatch(ctx, l.c, queuety.State{"order": 1, "counter": 0})
	require.NoError(t, err)
	var dispatched struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(l.php.eval(`
$id = \Queuety\Queuety::workflow('live_deadline_php')
	->then(\QueuetyGoInterop\Increment::class)
	->must_complete_within(minutes: 1)
	->on_deadline(\QueuetyGoInterop\Escalate::class)
	->dispatch(['order' => 2, 'counter' => 0]);
echo json_encode(['id' => $id]);`)), &dispatched))
	phpID := dispatched.ID
	require.NotZero(t, phpID, "PHP-dispatched workflow")
	l.pastDeadline(goID)
	l.pastDeadline(phpID)

	// Go sweeps first: a handler-less cron worker, then a worker with the
	// steps, which claims the due steps of both workflows.
	l.workOnce()
	w := interopWorker(l.c)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	for _, id := range []int64{goID, phpID} {
		wf := l.status(id)
		assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "workflow %d after the Go sweeps", id)
		assert.Equal(t, 0, wf.CurrentStep, "workflow %d did not advance past its deadline", id)
		jobs, err := l.c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
		require.NoError(t, err)
		require.Len(t, jobs, 1, "step jobs of %d", id)
		assert.Equal(t, queuetytype.JobBuried, jobs[0].Status, "the step claimed after the deadline")
		assert.Equal(t, "Deadline exceeded", jobs[0].ErrorMessage, "the step claimed after the deadline")
	}
	handlerJobs, err := l.c.ListJobs(ctx, driver.JobFilter{Handler: phpEscalate})
	require.NoError(t, err)
	assert.Empty(t, handlerJobs, "jobs enqueued for the PHP deadline handler")

	// PHP's sweep expires both and calls its handler for each.
	assert.Equal(t, 2, l.checkDeadlines(), "workflows PHP expired")
	for _, id := range []int64{goID, phpID} {
		wf := l.status(id)
		assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "workflow %d", id)
		assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "workflow %d", id)
	}

	// Nobody runs anything twice.
	l.workOnce()
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, l.checkDeadlines(), "PHP's second sweep")
	handlerJobs, err = l.c.ListJobs(ctx, driver.JobFilter{Handler: phpEscalate})
	require.NoError(t, err)
	assert.Empty(t, handlerJobs, "jobs enqueued for the PHP deadline handler")

	raw, err := os.ReadFile(marker)
	require.NoError(t, err, "the PHP deadline handler never ran")
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2, "PHP deadline handler calls: %s", raw)
	orders := map[float64]int{}
	for _, line := range lines {
		var call struct {
			Deadline string         `json:"deadline"`
			State    map[string]any `json:"state"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &call))
		assert.Equal(t, phpEscalate, call.Deadline, "handler class")
		order, _ := call.State["order"].(float64)
		orders[order]++
		for k := range call.State {
			assert.False(t, strings.HasPrefix(k, "_"), "public state only, got %q", k)
		}
	}
	assert.Equal(t, map[float64]int{1: 1, 2: 1}, orders, "calls per workflow (by its state's order)")
}

// TestLivePHPSweepOfGoDeadlineHandler: Queuety PHP's sweep fails a
// workflow whose deadline handler is a Go handler without calling it (it
// calls only PHP classes). A Go worker that has the handler finds the
// expiry and runs the handler, once; a Go worker without it leaves it.
func TestLivePHPSweepOfGoDeadlineHandler(t *testing.T) {
	ctx := context.Background()
	l := newLiveDeadlines(t)
	id, err := builder.Workflow("live_deadline_go_handler").
		Then(`QueuetyGoInterop\Increment`).
		MustCompleteWithin(0, 0, 1, 0).OnDeadline("go_escalate").
		Dispatch(ctx, l.c, queuety.State{"order": 3, "counter": 0})
	require.NoError(t, err)
	l.pastDeadline(id)

	assert.Equal(t, 1, l.checkDeadlines(), "workflows PHP expired")
	assert.Equal(t, queuetytype.WorkflowFailed, l.status(id).Status, "after PHP's sweep")
	// The sweep gate's read sees the deadline PHP expired, within the
	// lookback of the deadline sweep's handoff of such workflows.
	due, known, err := clientseam.Engine(l.c).MaintenanceDue(ctx)
	require.NoError(t, err)
	require.True(t, known, "the store has the gate's read")
	assert.WithinDuration(t, time.Now(), due.FailedDeadline, time.Hour, "latest deadline of a failed workflow")
	l.workOnce() // no Go handlers: leaves it
	jobs, err := l.c.ListJobs(ctx, driver.JobFilter{Handler: "go_escalate"})
	require.NoError(t, err)
	assert.Empty(t, jobs, "handler jobs enqueued by a worker without the handler")

	var calls atomic.Int64
	var got queuety.State
	w := worker.New(l.c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleDeadline("go_escalate", func(_ context.Context, s queuety.State) error {
		calls.Add(1)
		got = s
		return nil
	})
	for range 2 {
		_, err := w.RunOnce(ctx, 30*time.Second)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), calls.Load(), "Go deadline handler calls")
	assert.Equal(t, int64(3), got["order"], "the handler got the workflow's public state")
	assert.Equal(t, 0, l.checkDeadlines(), "PHP's second sweep")
	fails, err := l.c.Failures(ctx, id, 0)
	require.NoError(t, err)
	require.Len(t, fails, 1, "timeout failure recorded for the expiry")
	assert.Equal(t, queuetytype.TimeoutExecution, fails[0].TimeoutKind, "failure kind")
}
