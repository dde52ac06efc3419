package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/bench"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The test binary doubles as a queuety-worker program with handlers: when
// envChild is set, TestMain runs the CLI with cronRegistry instead of the
// tests, so the cron test can start real `work --once` processes.
const (
	envChild  = "QUEUETY_CLI_TEST_BINARY"
	envMarker = "QUEUETY_CLI_TEST_MARKER" // file the deadline callback appends to
)

func TestMain(m *testing.M) {
	// bench.IsChild: a bench child process (latency-xproc, rss-drain-1w)
	// started by a bench test runs `bench` in this binary.
	if os.Getenv(envChild) == "1" || bench.IsChild() {
		os.Exit(cli.Main(cronRegistry()))
	}
	os.Exit(m.Run())
}

// cronRegistry has the handlers of the child processes. Each step records
// the process it ran in, so the test can tell the steps ran in separate
// short-lived processes.
func cronRegistry() *queuety.Registry {
	reg := queuety.NewRegistry()
	pid := int64(os.Getpid())
	reg.HandleStep("cron.fetch", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"rows": 3, "fetch_pid": pid}, nil
	})
	reg.HandleStep("cron.transform", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		rows, ok := s.Int("rows")
		if !ok {
			return nil, queuety.NonRetryable(errors.New("transform: no rows in the state"))
		}
		return queuety.State{"transformed": rows * 10, "transform_pid": pid}, nil
	})
	reg.HandleStep("cron.load", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, ok := s.Int("transformed")
		if !ok {
			return nil, queuety.NonRetryable(errors.New("load: nothing transformed"))
		}
		return queuety.State{"loaded": n, "load_pid": pid}, nil
	})
	reg.HandleDeadline("cron.deadline", func(ctx context.Context, s queuety.State) error {
		path := os.Getenv(envMarker)
		if path == "" {
			return errors.New("no " + envMarker)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "deadline tag=%s pid=%d\n", s.String("tag"), pid)
		return errors.Join(err, f.Close())
	})
	return reg
}

// cronRun is one `work --once` process.
type cronRun struct {
	args          []string
	stdout        string
	stderr        string
	code          int
	err           error
	pid           int
	start, finish time.Time
}

func (r cronRun) String() string {
	return fmt.Sprintf("%v: exit %d (%v) in %s\nstdout:\n%sstderr:\n%s", r.args, r.code, r.err,
		r.finish.Sub(r.start).Round(time.Millisecond), r.stdout, r.stderr)
}

// runWorkerProcess starts the test binary as a worker with --once and
// waits for it to exit. It does not fail the test itself, so it can run
// on any goroutine.
func runWorkerProcess(exe, dsn, marker string) cronRun {
	r := cronRun{args: []string{"work", "--once", "--max-time", "5s", "--dsn", dsn}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, r.args...)
	// Under -race a process sleeps 1 s before exiting (GORACE
	// atexit_sleep_ms); a short pause keeps the cron loop quick while a
	// race report still fails the run (exit code 66).
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=20")
	cmd.Env = append(os.Environ(), envChild+"=1", envMarker+"="+marker, cli.EnvDSN+"=", "GORACE="+gorace)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	r.start = time.Now()
	if r.err = cmd.Start(); r.err == nil {
		r.pid = cmd.Process.Pid
		r.err = cmd.Wait()
	}
	r.finish = time.Now()
	r.stdout, r.stderr = out.String(), errOut.String()
	var ee *exec.ExitError
	switch {
	case r.err == nil:
	case errors.As(r.err, &ee):
		r.code = ee.ExitCode()
	default:
		r.code = -1
	}
	if ctx.Err() != nil {
		r.code, r.err = -1, fmt.Errorf("did not exit within 30s: %w", r.err)
	}
	return r
}

// TestCronDrivenWorkers: a test starts `--once` processes in a loop, the
// way cron would. Together they finish a 3-step workflow with a Sleep step
// and enforce an expired deadline, with no daemon.
func TestCronDrivenWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	if runtime.GOOS == "windows" {
		t.Skip("re-executes the test binary as a worker")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		cronScenario(t, exe, tempDSN(t))
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		dsn, _ := migrated.DSN(t)
		cronScenario(t, exe, dsn)
	})
}

func cronScenario(t *testing.T, exe, dsn string) {
	ctx := context.Background()
	c := openClient(t, dsn)
	marker := filepath.Join(t.TempDir(), "deadline-calls.log")

	// (a) fetch → Sleep(2s) → transform → load.
	pipeline, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "cron_pipeline", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "fetch", Handler: "cron.fetch"},
		{Type: queuetytype.StepDelay, Name: "pause", Delay: 2 * time.Second},
		{Type: queuetytype.StepSingle, Name: "transform", Handler: "cron.transform"},
		{Type: queuetytype.StepSingle, Name: "load", Handler: "cron.load"},
	}}, queuety.State{"source": "cron"})
	require.NoError(t, err)
	// (b) one step no worker has, a 1 s execution timeout and a deadline
	// callback the workers have.
	doomed, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "cron_doomed", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "never", Handler: "cron.never"},
	}, ExecutionTimeout: time.Second, OnDeadline: "cron.deadline"}, queuety.State{"tag": "doomed"})
	require.NoError(t, err)
	wf, err := c.Workflow(ctx, doomed)
	require.NoError(t, err)
	require.False(t, wf.DeadlineAt.IsZero(), "doomed workflow has no deadline: %+v", wf)
	deadlineAt := wf.DeadlineAt

	callbacks := func() []*driver.Job {
		t.Helper()
		jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "cron.deadline"})
		require.NoError(t, err)
		return jobs
	}
	var runs []cronRun
	history := func() string {
		var b strings.Builder
		for i, r := range runs[max(0, len(runs)-4):] {
			fmt.Fprintf(&b, "--- run %d: %s\n", max(0, len(runs)-4)+i+1, r)
		}
		return b.String()
	}
	finished := func() bool {
		t.Helper()
		p, err := c.Workflow(ctx, pipeline)
		require.NoError(t, err)
		d, err := c.Workflow(ctx, doomed)
		require.NoError(t, err)
		require.NotEqual(t, queuetytype.WorkflowFailed, p.Status, "pipeline (%s)\n%s", p.ErrorMessage, history())
		require.NotEqual(t, queuetytype.WorkflowCancelled, p.Status, "pipeline\n%s", history())
		require.NotEqual(t, queuetytype.WorkflowCompleted, d.Status, "doomed\n%s", history())
		cb := callbacks()
		for _, j := range cb {
			require.NotEqual(t, queuetytype.JobBuried, j.Status, "deadline callback job %d: %s\n%s", j.ID, j.ErrorMessage, history())
			require.NotEqual(t, queuetytype.JobFailed, j.Status, "deadline callback job %d: %s\n%s", j.ID, j.ErrorMessage, history())
		}
		return p.Status == queuetytype.WorkflowCompleted && d.Status == queuetytype.WorkflowFailed &&
			len(cb) == 1 && cb[0].Status == queuetytype.JobCompleted
	}

	// The cron loop: each "minute" starts one worker as soon as the previous
	// one exited; once the deadline has passed, one tick starts two at once.
	// A run that finds nothing due takes some 10-50 ms, so the 2 s sleep
	// alone spans dozens to hundreds of runs.
	const maxRuns = 1000
	start := time.Now()
	limit := start.Add(60 * time.Second)
	pairAt := -1
	// The pair runs even when a single run that straddled the deadline (a
	// slow machine) already expired the workflow.
	for pairAt < 0 || !finished() {
		require.Less(t, len(runs), maxRuns, "not finished after %d runs in %s\n%s", len(runs), time.Since(start).Round(time.Millisecond), history())
		require.False(t, time.Now().After(limit), "not finished after %d runs in %s\n%s", len(runs), time.Since(start).Round(time.Millisecond), history())
		var batch []cronRun
		if pairAt < 0 && time.Now().After(deadlineAt) {
			pairAt = len(runs)
			pair := make([]cronRun, 2)
			var wg sync.WaitGroup
			for i := range pair {
				wg.Go(func() { pair[i] = runWorkerProcess(exe, dsn, marker) })
			}
			wg.Wait()
			batch = pair
		} else {
			batch = []cronRun{runWorkerProcess(exe, dsn, marker)}
		}
		runs = append(runs, batch...)
		for _, r := range batch {
			require.Equal(t, 0, r.code, "worker run %d failed: %s", len(runs), r)
		}
	}
	took := time.Since(start)
	t.Logf("finished after %d work --once runs in %s (concurrent pair at runs %d and %d)", len(runs), took.Round(time.Millisecond), pairAt+1, pairAt+2)

	// Every process was a once-mode run that exited 0 (its summary line
	// says so); none ran as a daemon.
	for i, r := range runs {
		assert.Contains(t, r.stdout, "work --once: claimed", "run %d was not a once-mode run: %s", i+1, r)
		assert.NotContains(t, r.stderr, "worker started", "run %d was not a once-mode run: %s", i+1, r)
		assert.NotContains(t, r.stderr, "worker stopped", "run %d was not a once-mode run: %s", i+1, r)
	}
	require.GreaterOrEqual(t, pairAt, 0, "no concurrent pair was started")
	a, b := runs[pairAt], runs[pairAt+1]
	assert.True(t, a.start.Before(b.finish), "the pair did not overlap: [%s, %s] and [%s, %s]", a.start, a.finish, b.start, b.finish)
	assert.True(t, b.start.Before(a.finish), "the pair did not overlap: [%s, %s] and [%s, %s]", a.start, a.finish, b.start, b.finish)

	// (a) completed with state from all three steps, carried across
	// processes by the store.
	p, err := c.Workflow(ctx, pipeline)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, p.Status, "pipeline = %+v", p)
	st, err := c.State(ctx, pipeline)
	require.NoError(t, err)
	rows, _ := st.Int("rows")
	transformed, _ := st.Int("transformed")
	loaded, _ := st.Int("loaded")
	assert.Equal(t, int64(3), rows, "pipeline state = %v", st)
	assert.Equal(t, int64(30), transformed, "pipeline state = %v", st)
	assert.Equal(t, int64(30), loaded, "pipeline state = %v", st)
	assert.Equal(t, "cron", st.String("source"), "pipeline state = %v", st)
	self := int64(os.Getpid())
	fetchPID, _ := st.Int("fetch_pid")
	transformPID, _ := st.Int("transform_pid")
	loadPID, _ := st.Int("load_pid")
	stepPIDs := map[string]int64{"fetch": fetchPID, "transform": transformPID, "load": loadPID}
	for name, pid := range stepPIDs {
		assert.NotZero(t, pid, "%s step recorded no process", name)
		assert.NotEqual(t, self, pid, "%s step ran in the test process, not in a worker process", name)
	}
	byPID := map[int64]cronRun{}
	for _, r := range runs {
		byPID[int64(r.pid)] = r
	}
	for name, pid := range stepPIDs {
		_, ok := byPID[pid]
		assert.True(t, ok, "%s ran in process %d, which is none of the work --once runs", name, pid)
	}
	// A once-mode run exits when nothing is due, so unless the run that
	// fetched was itself slower than the sleep, another run transformed.
	if fr := byPID[fetchPID]; fetchPID == transformPID {
		assert.GreaterOrEqual(t, fr.finish.Sub(fr.start), 1500*time.Millisecond, "fetch and transform ran in the same process %d, across a 2 s sleep", fetchPID)
	}
	// a 2 s sleep, stored at second precision
	assert.GreaterOrEqual(t, p.CompletedAt.Sub(p.StartedAt), time.Second, "pipeline took less than its sleep")

	// No job ran twice: each step job completed on its first attempt, once
	// per step, with one "started" log row.
	jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: pipeline})
	require.NoError(t, err)
	var handlers []string
	steps := map[int]int64{}
	for _, j := range jobs {
		handlers = append(handlers, j.Handler)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "pipeline job %d (%s) status", j.ID, j.Handler)
		assert.Equal(t, 1, j.Attempts, "pipeline job %d (%s) attempts", j.ID, j.Handler)
		if !assert.NotNil(t, j.StepIndex, "pipeline job %d has no step index", j.ID) {
			continue
		}
		prev, dup := steps[*j.StepIndex]
		assert.False(t, dup, "step %d has two jobs: %d and %d", *j.StepIndex, prev, j.ID)
		steps[*j.StepIndex] = j.ID
	}
	slices.Sort(handlers)
	assert.Equal(t, []string{engine.HandlerDelay, "cron.fetch", "cron.load", "cron.transform"}, handlers, "pipeline job handlers")
	started, err := c.Logs(ctx, driver.LogFilter{WorkflowID: pipeline, Event: driver.LogStarted})
	require.NoError(t, err)
	perJob := map[int64]int{}
	for _, l := range started {
		if l.JobID != nil {
			perJob[*l.JobID]++
		}
	}
	for _, j := range jobs {
		if strings.HasPrefix(j.Handler, "cron.") {
			assert.Equal(t, 1, perJob[j.ID], "started log rows of pipeline job %d (%s)", j.ID, j.Handler)
		} else {
			assert.LessOrEqual(t, perJob[j.ID], 1, "started log rows of pipeline job %d (%s)", j.ID, j.Handler)
		}
	}

	// (b) failed at its deadline; its step never ran; the callback ran once,
	// in a worker process.
	d, err := c.Workflow(ctx, doomed)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowFailed, d.Status, "doomed = %+v", d)
	assert.Contains(t, d.ErrorMessage, "Deadline exceeded", "doomed workflow error")
	djobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: doomed})
	require.NoError(t, err)
	for _, j := range djobs {
		if j.Handler == "cron.never" {
			assert.Equal(t, queuetytype.JobBuried, j.Status, "doomed step job %d (want buried, never attempted)", j.ID)
			assert.Zero(t, j.Attempts, "doomed step job %d (want buried, never attempted)", j.ID)
		}
	}
	cb := callbacks()
	require.Len(t, cb, 1, "deadline callback jobs")
	assert.Equal(t, queuetytype.JobCompleted, cb[0].Status, "deadline callback job = %+v", cb[0])
	assert.Equal(t, 1, cb[0].Attempts, "deadline callback job = %+v", cb[0])
	assert.Contains(t, string(cb[0].Payload), `"tag":"doomed"`, "deadline callback job payload")
	calls, err := os.ReadFile(marker)
	require.NoError(t, err, "the deadline callback left no trace")
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	require.Len(t, lines, 1, "deadline callback calls:\n%s", calls)
	require.True(t, strings.HasPrefix(lines[0], "deadline tag=doomed pid="), "deadline callback calls:\n%s", calls)
	pid, _ := strconv.ParseInt(strings.TrimPrefix(lines[0], "deadline tag=doomed pid="), 10, 64)
	if assert.NotEqual(t, self, pid, "deadline callback ran in the test process") {
		_, ok := byPID[pid]
		assert.True(t, ok, "deadline callback ran in process %d, which is none of the work --once runs", pid)
	}
	assert.LessOrEqual(t, took, 30*time.Second, "the cron loop took too long")
}
