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

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
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
	if os.Getenv(envChild) == "1" {
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
	if err != nil {
		t.Fatal(err)
	}
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
		{Type: queuety.StepSingle, Name: "fetch", Handler: "cron.fetch"},
		{Type: queuety.StepDelay, Name: "pause", Delay: 2 * time.Second},
		{Type: queuety.StepSingle, Name: "transform", Handler: "cron.transform"},
		{Type: queuety.StepSingle, Name: "load", Handler: "cron.load"},
	}}, queuety.State{"source": "cron"})
	if err != nil {
		t.Fatal(err)
	}
	// (b) one step no worker has, a 1 s execution timeout and a deadline
	// callback the workers have.
	doomed, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "cron_doomed", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Name: "never", Handler: "cron.never"},
	}, ExecutionTimeout: time.Second, OnDeadline: "cron.deadline"}, queuety.State{"tag": "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := c.Workflow(ctx, doomed)
	if err != nil || wf.DeadlineAt.IsZero() {
		t.Fatalf("doomed workflow = %+v (%v)", wf, err)
	}
	deadlineAt := wf.DeadlineAt

	callbacks := func() []*driver.Job {
		t.Helper()
		jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "cron.deadline"})
		if err != nil {
			t.Fatal(err)
		}
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
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Workflow(ctx, doomed)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status == queuety.WorkflowFailed || p.Status == queuety.WorkflowCancelled || d.Status == queuety.WorkflowCompleted {
			t.Fatalf("pipeline %s (%s), doomed %s\n%s", p.Status, p.ErrorMessage, d.Status, history())
		}
		cb := callbacks()
		for _, j := range cb {
			if j.Status == queuety.JobBuried || j.Status == queuety.JobFailed {
				t.Fatalf("deadline callback job %d %s: %s\n%s", j.ID, j.Status, j.ErrorMessage, history())
			}
		}
		return p.Status == queuety.WorkflowCompleted && d.Status == queuety.WorkflowFailed &&
			len(cb) == 1 && cb[0].Status == queuety.JobCompleted
	}

	// The cron loop: each "minute" starts one worker as soon as the previous
	// one exited; once the deadline has passed, one tick starts two at once.
	// A run that finds nothing due takes some 10-50 ms, so the 2 s sleep
	// alone spans dozens to hundreds of runs.
	const maxRuns = 1000
	start := time.Now()
	limit := start.Add(60 * time.Second)
	pairAt := -1
	for !finished() {
		if len(runs) >= maxRuns || time.Now().After(limit) {
			t.Fatalf("not finished after %d runs in %s\n%s", len(runs), time.Since(start).Round(time.Millisecond), history())
		}
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
			if r.code != 0 {
				t.Fatalf("worker run %d failed: %s", len(runs), r)
			}
		}
	}
	took := time.Since(start)
	t.Logf("finished after %d work --once runs in %s (concurrent pair at runs %d and %d)", len(runs), took.Round(time.Millisecond), pairAt+1, pairAt+2)

	// Every process was a once-mode run that exited 0 (its summary line
	// says so); none ran as a daemon.
	for i, r := range runs {
		if !strings.Contains(r.stdout, "work --once: claimed") ||
			strings.Contains(r.stderr, "worker started") || strings.Contains(r.stderr, "worker stopped") {
			t.Errorf("run %d was not a once-mode run: %s", i+1, r)
		}
	}
	if pairAt < 0 {
		t.Fatal("no concurrent pair was started")
	}
	if a, b := runs[pairAt], runs[pairAt+1]; !a.start.Before(b.finish) || !b.start.Before(a.finish) {
		t.Errorf("the pair did not overlap: [%s, %s] and [%s, %s]", a.start, a.finish, b.start, b.finish)
	}

	// (a) completed with state from all three steps, carried across
	// processes by the store.
	p, err := c.Workflow(ctx, pipeline)
	if err != nil || p.Status != queuety.WorkflowCompleted {
		t.Fatalf("pipeline = %+v (%v)", p, err)
	}
	st, err := c.State(ctx, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := st.Int("rows")
	transformed, _ := st.Int("transformed")
	loaded, _ := st.Int("loaded")
	if rows != 3 || transformed != 30 || loaded != 30 || st.String("source") != "cron" {
		t.Errorf("pipeline state = %v", st)
	}
	self := int64(os.Getpid())
	fetchPID, _ := st.Int("fetch_pid")
	transformPID, _ := st.Int("transform_pid")
	loadPID, _ := st.Int("load_pid")
	if fetchPID == 0 || transformPID == 0 || loadPID == 0 || fetchPID == self || transformPID == self || loadPID == self {
		t.Errorf("steps did not run in worker processes: fetch %d, transform %d, load %d (test %d)", fetchPID, transformPID, loadPID, self)
	}
	byPID := map[int64]cronRun{}
	for _, r := range runs {
		byPID[int64(r.pid)] = r
	}
	for name, pid := range map[string]int64{"fetch": fetchPID, "transform": transformPID, "load": loadPID} {
		if _, ok := byPID[pid]; !ok {
			t.Errorf("%s ran in process %d, which is none of the work --once runs", name, pid)
		}
	}
	// A once-mode run exits when nothing is due, so unless the run that
	// fetched was itself slower than the sleep, another run transformed.
	if fr := byPID[fetchPID]; fetchPID == transformPID && fr.finish.Sub(fr.start) < 1500*time.Millisecond {
		t.Errorf("fetch and transform ran in the same %s-long process %d, across a 2 s sleep", fr.finish.Sub(fr.start), fetchPID)
	}
	if p.CompletedAt.Sub(p.StartedAt) < time.Second { // a 2 s sleep, stored at second precision
		t.Errorf("pipeline took %s, shorter than its sleep", p.CompletedAt.Sub(p.StartedAt))
	}

	// No job ran twice: each step job completed on its first attempt, once
	// per step, with one "started" log row.
	jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: pipeline})
	if err != nil {
		t.Fatal(err)
	}
	var handlers []string
	steps := map[int]int64{}
	for _, j := range jobs {
		handlers = append(handlers, j.Handler)
		if j.Status != queuety.JobCompleted || j.Attempts != 1 {
			t.Errorf("pipeline job %d (%s): status %s, attempts %d", j.ID, j.Handler, j.Status, j.Attempts)
		}
		if j.StepIndex == nil {
			t.Errorf("pipeline job %d has no step index", j.ID)
			continue
		}
		if prev, dup := steps[*j.StepIndex]; dup {
			t.Errorf("step %d has two jobs: %d and %d", *j.StepIndex, prev, j.ID)
		}
		steps[*j.StepIndex] = j.ID
	}
	slices.Sort(handlers)
	if want := []string{engine.HandlerDelay, "cron.fetch", "cron.load", "cron.transform"}; !slices.Equal(handlers, want) {
		t.Errorf("pipeline job handlers = %v, want %v", handlers, want)
	}
	started, err := c.Logs(ctx, driver.LogFilter{WorkflowID: pipeline, Event: driver.LogStarted})
	if err != nil {
		t.Fatal(err)
	}
	perJob := map[int64]int{}
	for _, l := range started {
		if l.JobID != nil {
			perJob[*l.JobID]++
		}
	}
	for _, j := range jobs {
		if n := perJob[j.ID]; n > 1 || (n == 0 && strings.HasPrefix(j.Handler, "cron.")) {
			t.Errorf("pipeline job %d (%s) has %d started log rows, want 1", j.ID, j.Handler, n)
		}
	}

	// (b) failed at its deadline; its step never ran; the callback ran once,
	// in a worker process.
	d, err := c.Workflow(ctx, doomed)
	if err != nil || d.Status != queuety.WorkflowFailed || !strings.Contains(d.ErrorMessage, "Deadline exceeded") {
		t.Fatalf("doomed = %+v (%v)", d, err)
	}
	djobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: doomed})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range djobs {
		if j.Handler == "cron.never" && (j.Status != queuety.JobBuried || j.Attempts != 0) {
			t.Errorf("doomed step job %d: status %s, attempts %d (want buried, never attempted)", j.ID, j.Status, j.Attempts)
		}
	}
	cb := callbacks()
	if len(cb) != 1 || cb[0].Status != queuety.JobCompleted || cb[0].Attempts != 1 || !strings.Contains(string(cb[0].Payload), `"tag":"doomed"`) {
		t.Fatalf("deadline callback jobs = %+v", cb)
	}
	calls, err := os.ReadFile(marker)
	if err != nil {
		t.Fatalf("the deadline callback left no trace: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "deadline tag=doomed pid=") {
		t.Fatalf("deadline callback calls:\n%s", calls)
	}
	if pid, _ := strconv.ParseInt(strings.TrimPrefix(lines[0], "deadline tag=doomed pid="), 10, 64); pid == self {
		t.Errorf("deadline callback ran in the test process %d", pid)
	} else if _, ok := byPID[pid]; !ok {
		t.Errorf("deadline callback ran in process %d, which is none of the work --once runs", pid)
	}
	if took > 30*time.Second {
		t.Errorf("the cron loop took %s", took)
	}
}
