package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// The demo's queue, handler names and workflow names.
const (
	demoQueue       = "demo"
	demoEmail       = "demo.send_email"
	demoResize      = "demo.resize_image"
	demoFlaky       = "demo.flaky_report"
	demoFetch       = "demo.fetch"
	demoTransform   = "demo.transform"
	demoLoad        = "demo.load"
	demoOverrun     = "demo.slow_export"
	demoAlert       = "demo.deadline_alert"
	demoSignalName  = "approved"
	demoDelay       = 2 * time.Second
	demoDeadline    = 2 * time.Second
	demoConcurrency = 8
)

var (
	demoPipeline = queuety.WorkflowDefinition{Name: "demo.pipeline", Queue: demoQueue, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "fetch", Handler: demoFetch},
		{Type: queuetytype.StepSingle, Name: "transform", Handler: demoTransform},
		{Type: queuetytype.StepSingle, Name: "load", Handler: demoLoad},
	}}
	demoSleep = queuety.WorkflowDefinition{Name: "demo.sleepy_pipeline", Queue: demoQueue, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "fetch", Handler: demoFetch},
		{Type: queuetytype.StepDelay, Name: "cool_down", Delay: demoDelay},
		{Type: queuetytype.StepSingle, Name: "transform", Handler: demoTransform},
		{Type: queuetytype.StepSingle, Name: "load", Handler: demoLoad},
	}}
	demoApproval = queuety.WorkflowDefinition{Name: "demo.approval", Queue: demoQueue, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "fetch", Handler: demoFetch},
		{Type: queuetytype.StepWaitForSignal, Name: "wait_for_approval", Signal: demoSignalName, ResultKey: "approval"},
		{Type: queuetytype.StepSingle, Name: "load", Handler: demoLoad},
	}}
	demoDeadlined = queuety.WorkflowDefinition{Name: "demo.deadline", Queue: demoQueue, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "fetch", Handler: demoFetch},
		{Type: queuetytype.StepSingle, Name: "slow_export", Handler: demoOverrun},
	}, ExecutionTimeout: demoDeadline, OnDeadline: demoAlert}
)

func demoCommand() *Command {
	return &Command{
		Name:    "demo",
		Summary: "run a real workload on an embedded SQLite store, with no setup, and report",
		Help: `The demo creates a fresh SQLite file in the temporary directory and keeps
it for a look afterwards (its path is printed). --dsn or --wp-config pick
another store; QUEUETY_DSN is ignored, so the demo never fills a configured
queue by accident. Everything runs on the queue "demo".

It dispatches plain jobs (one fails once, then succeeds on its retry) and
workflows: 3-step pipelines whose state flows from step to step, one with a
2 s durable sleep, one that waits for a signal the demo then sends, and one
with a 2 s execution deadline whose step overruns it (its OnDeadline
callback prints the public state). A worker with 8 slots runs everything
until all of it is finished, then the demo prints a summary and the
commands to look at the result.

While it runs, a progress line every second shows the jobs and workflows
done and the job rate (on a terminal, one line rewritten in place). With
--json it prints no progress and no text, only one JSON object at the
end: the DSN without its password, the counts, durations and rates, the
ids of the deadline, sleep and signal workflows, and the commands to look
around. When started by "go run", the commands name "go run" too.`,
		Examples: []string{
			Program + " demo",
			Program + " demo --jobs 1000 --workflows 50",
			Program + " demo --dsn sqlite://demo.db",
		},
		LogLevel: "error",
		Setup: func(fs *flag.FlagSet) RunFunc {
			jobs := fs.Int("jobs", 200, "plain jobs to dispatch")
			workflows := fs.Int("workflows", 20, "workflows to dispatch (the first three are the deadline, sleep and signal ones)")
			timeout := durationFlag(fs, "timeout", 60*time.Second, "give up when the workload is not finished after this `duration`")
			return func(e *Env, _ []string) error {
				switch {
				case *jobs < 0 || *jobs > 1_000_000:
					return Usagef("--jobs must be between 0 and 1000000, got %d", *jobs)
				case *workflows < 0 || *workflows > 100_000:
					return Usagef("--workflows must be between 0 and 100000, got %d", *workflows)
				case *timeout <= 0:
					return Usagef("--timeout must be positive, got %s", *timeout)
				}
				ctx, stop := signal.NotifyContext(e.Ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				d := &demo{e: e, out: &syncWriter{w: e.Stdout}, jobs: *jobs, workflows: *workflows, timeout: *timeout,
					tty: isTerminal(e.Stdout)}
				if e.Globals.JSON {
					d.out, d.tty = io.Discard, false
				}
				wd, _ := demoWorkDir()
				d.prog = hintCommand(demoProgramPath(), wd)
				return d.run(ctx)
			}
		},
	}
}

type demo struct {
	e                    *Env
	out                  io.Writer
	jobs, workflows      int
	timeout              time.Duration
	dsn, hintDSN, source string
	prog                 string // how the hints name the program

	outMu         sync.Mutex
	tty           bool // stdout is a terminal: the progress line is rewritten in place
	progressOpen  bool // a progress line without its newline is on the terminal
	progressWidth int

	c          *queuety.Client
	deadlineID int64
	sleepID    int64
	approvalID int64
	wfIDs      map[int64]bool

	jobsDone, jobsFirstTry, failedAttempts, stepsDone, callbacks atomic.Int64
	mu                                                           sync.Mutex
	lastFirstTry                                                 time.Time
}

func (d *demo) printf(format string, args ...any) { d.line(format, args...) }

func (d *demo) run(ctx context.Context) error {
	if err := d.chooseStore(); err != nil {
		return err
	}
	d.e.Ctx = ctx
	c, err := d.e.OpenDSN(d.dsn, d.source)
	if err != nil {
		return err
	}
	defer c.Close()
	d.c = c
	info := c.StoreInfo()

	d.printf("Queuety demo\n")
	tw := newTable(d.out)
	fmt.Fprintf(tw, "  store\t%s (%s) %s\n", info.Driver, info.Server, info.Address)
	fmt.Fprintf(tw, "  workload\t%s\n", d.describeWorkload())
	fmt.Fprintf(tw, "  worker\tconcurrency %d on queue %q; deadline sweep and signal timers every 1 s\n", demoConcurrency, demoQueue)
	tw.Flush()

	reg := d.registry()
	if err := d.dispatch(ctx); err != nil {
		return err
	}

	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	w := worker.New(c, worker.WithRegistry(reg), worker.Queues(demoQueue), worker.Concurrency(demoConcurrency),
		worker.Maintenance(worker.Intervals{Deadlines: time.Second, WaitTimer: time.Second}),
		worker.ShutdownTimeout(5*time.Second), worker.WithLogger(d.e.Logger()),
		worker.WithHooks(worker.Hooks{Finished: d.finished}))
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(wctx) }()
	d.printf("\nRunning...\n")

	waitErr := d.waitUntilDone(ctx, start)
	elapsed := time.Since(start)
	d.endProgress()
	stopWorker()
	if err := <-runErr; err != nil && waitErr == nil {
		waitErr = fmt.Errorf("worker: %w", err)
	}
	if waitErr != nil {
		return waitErr
	}
	return d.summary(ctx, start, elapsed)
}

// chooseStore picks the DSN: an explicit --dsn or --wp-config, otherwise
// a fresh SQLite file in a new temporary directory.
func (d *demo) chooseStore() error {
	g := d.e.Globals
	if g.DSN != "" || g.WPConfig != "" {
		dsn, source, err := d.e.ResolveDSN()
		if err != nil {
			return err
		}
		d.dsn, d.source, d.hintDSN = dsn, source, "'<your DSN>'"
		if driver.SchemeOf(dsn) == "sqlite" {
			d.hintDSN = dsn
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "queuety-demo-")
	if err != nil {
		return fmt.Errorf("create the demo database: %w", err)
	}
	path := filepath.Join(dir, "demo.db")
	d.dsn, d.source, d.hintDSN = "sqlite://"+path, "the demo's temporary file "+path, "sqlite://"+path
	return nil
}

func (d *demo) describeWorkload() string {
	s := fmt.Sprintf("%d jobs", d.jobs)
	if d.jobs > 0 {
		s += " (one fails once, then succeeds)"
	}
	s += fmt.Sprintf(" and %d workflows", d.workflows)
	var kinds []string
	if d.workflows > 0 {
		kinds = append(kinds, fmt.Sprintf("1 with a %s deadline its step overruns", demoDeadline))
	}
	if d.workflows > 1 {
		kinds = append(kinds, fmt.Sprintf("1 with a %s durable sleep", demoDelay))
	}
	if d.workflows > 2 {
		kinds = append(kinds, fmt.Sprintf("1 waiting for signal %q", demoSignalName))
	}
	if n := d.workflows - 3; n > 0 {
		kinds = append(kinds, fmt.Sprintf("%d three-step pipelines", n))
	}
	if len(kinds) > 0 {
		s += ": " + strings.Join(kinds, ", ")
	}
	return s
}

// registry registers the demo's handlers.
func (d *demo) registry() *queuety.Registry {
	reg := queuety.NewRegistry()
	work := func(ctx context.Context, dur time.Duration) error {
		t := time.NewTimer(dur)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	reg.HandleJob(demoEmail, func(ctx context.Context, p queuety.Payload) error {
		if p.String("to") == "" {
			return queuety.NonRetryable(errors.New("payload has no recipient"))
		}
		return work(ctx, time.Millisecond)
	})
	reg.HandleJob(demoResize, func(ctx context.Context, p queuety.Payload) error {
		return work(ctx, 2*time.Millisecond)
	})
	reg.HandleJob(demoFlaky, func(ctx context.Context, p queuety.Payload) error {
		if info, _ := queuety.JobInfoFrom(ctx); info.Attempt <= 1 {
			return errors.New("report service unavailable (simulated; the retry succeeds)")
		}
		return work(ctx, time.Millisecond)
	})
	reg.HandleStep(demoFetch, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("seed")
		return queuety.State{"records": 3 + n%5, "fetched_from": s.String("source")}, work(ctx, time.Millisecond)
	})
	reg.HandleStep(demoTransform, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, ok := s.Int("records")
		if !ok {
			return nil, queuety.NonRetryable(errors.New("no records in state"))
		}
		return queuety.State{"transformed": n * 2}, work(ctx, time.Millisecond)
	})
	reg.HandleStep(demoLoad, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, ok := s.Int("transformed")
		if !ok {
			n, _ = s.Int("records")
		}
		return queuety.State{"loaded": n}, work(ctx, time.Millisecond)
	})
	reg.HandleStep(demoOverrun, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		// Runs past the workflow's deadline: ctx ends when the deadline passes.
		return nil, work(ctx, 30*time.Second)
	})
	reg.HandleDeadline(demoAlert, func(ctx context.Context, s queuety.State) error {
		d.callbacks.Add(1)
		d.printf("  on-deadline callback %s: workflow %d missed its deadline; public state %s\n", demoAlert, d.deadlineID, compactJSON(s))
		return nil
	})
	return reg
}

// dispatch enqueues the jobs and the workflows.
func (d *demo) dispatch(ctx context.Context) error {
	if d.jobs > 0 {
		if _, err := d.c.Dispatch(ctx, demoFlaky, queuety.State{"report": "daily"}, queuety.OnQueue(demoQueue),
			queuety.Retry(3, queuety.BackoffSeconds(1))); err != nil {
			return err
		}
		reqs := make([]queuety.JobRequest, 0, d.jobs-1)
		for i := 1; i < d.jobs; i++ {
			r := queuety.JobRequest{Handler: demoEmail, Payload: queuety.State{"to": fmt.Sprintf("user%d@example.com", i)},
				Options: []queuety.JobOption{queuety.OnQueue(demoQueue)}}
			if i%2 == 0 {
				r = queuety.JobRequest{Handler: demoResize, Payload: queuety.State{"image": fmt.Sprintf("photo-%d.jpg", i), "width": 640},
					Options: []queuety.JobOption{queuety.OnQueue(demoQueue), queuety.WithPriority(queuetytype.PriorityHigh)}}
			}
			reqs = append(reqs, r)
		}
		if len(reqs) > 0 {
			if _, err := d.c.DispatchMany(ctx, reqs); err != nil {
				return err
			}
		}
	}
	d.wfIDs = map[int64]bool{}
	for i := 0; i < d.workflows; i++ {
		def := demoPipeline
		switch i {
		case 0:
			def = demoDeadlined
		case 1:
			def = demoSleep
		case 2:
			def = demoApproval
		}
		def.Steps = append([]queuety.WorkflowStep(nil), def.Steps...)
		id, err := d.c.DispatchWorkflow(ctx, def, queuety.State{"source": fmt.Sprintf("feed-%d", i), "seed": i})
		if err != nil {
			return err
		}
		d.wfIDs[id] = true
		switch i {
		case 0:
			d.deadlineID = id
		case 1:
			d.sleepID = id
		case 2:
			d.approvalID = id
		}
	}
	return nil
}

// finished counts outcomes (a worker hook; called from many goroutines).
func (d *demo) finished(job *driver.Job, err error) {
	switch {
	case job.WorkflowID != 0:
		if err == nil {
			d.stepsDone.Add(1)
		}
	case job.Handler == demoAlert:
	case err != nil:
		d.failedAttempts.Add(1)
	default:
		d.jobsDone.Add(1)
		if job.Attempts <= 1 {
			d.jobsFirstTry.Add(1)
			d.mu.Lock()
			d.lastFirstTry = time.Now()
			d.mu.Unlock()
		}
	}
}

// waitUntilDone polls every 100 ms until every demo workflow is finished
// and the demo queue has no pending or processing job, sending the signal
// the approval workflow waits for once it waits, and printing a progress
// line every second.
func (d *demo) waitUntilDone(ctx context.Context, start time.Time) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.NewTimer(d.timeout)
	defer giveUp.Stop()
	signalled := false
	nextProgress := start.Add(demoProgressEvery)
	for {
		// Workflows first, then jobs: a workflow that ends enqueues its
		// callback in the same transaction, so the job count sees it.
		openWfs, waiting, err := d.openWorkflows(ctx)
		if err != nil {
			return err
		}
		if !signalled && waiting {
			d.printf("  workflow %d is waiting for signal %q: sending it\n", d.approvalID, demoSignalName)
			if err := d.c.Signal(ctx, d.approvalID, demoSignalName, queuety.State{"by": "demo", "note": "looks good"}); err != nil {
				return err
			}
			signalled = true
			continue
		}
		openJobs, err := d.countJobs(ctx, queuetytype.JobPending, queuetytype.JobProcessing)
		if err != nil {
			return err
		}
		if openWfs == 0 && openJobs == 0 {
			return nil
		}
		if now := time.Now(); !now.Before(nextProgress) {
			d.progress(now.Sub(start), len(d.wfIDs)-openWfs)
			for !nextProgress.After(now) {
				nextProgress = nextProgress.Add(demoProgressEvery)
			}
		}
		select {
		case <-tick.C:
		case <-giveUp.C:
			return fmt.Errorf("demo did not finish within %s: %d jobs and %d workflows still open (inspect with: %s --dsn %s status)",
				d.timeout, openJobs, openWfs, d.prog, d.hintDSN)
		case <-ctx.Done():
			return fmt.Errorf("demo interrupted: %d jobs and %d workflows still open", openJobs, openWfs)
		}
	}
}

func (d *demo) openWorkflows(ctx context.Context) (open int, approvalWaiting bool, err error) {
	if len(d.wfIDs) == 0 {
		return 0, false, nil
	}
	for _, s := range workflowStatuses {
		if s.Terminal() {
			continue
		}
		wfs, err := d.c.ListWorkflows(ctx, driver.WorkflowFilter{Status: s, Limit: len(d.wfIDs) + 1000})
		if err != nil {
			return 0, false, err
		}
		for _, w := range wfs {
			if d.wfIDs[w.ID] {
				open++
				if w.ID == d.approvalID && w.Status == queuetytype.WorkflowWaitingForSignal {
					approvalWaiting = true
				}
			}
		}
	}
	return open, approvalWaiting, nil
}

// countJobs counts the demo queue's jobs in the given statuses.
func (d *demo) countJobs(ctx context.Context, statuses ...queuetytype.JobStatus) (int64, error) {
	counts, err := d.c.Counts(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, qc := range counts {
		if qc.Queue == demoQueue && slices.Contains(statuses, qc.Status) {
			n += qc.Count
		}
	}
	return n, nil
}

func (d *demo) summary(ctx context.Context, start time.Time, elapsed time.Duration) error {
	completedWfs := 0
	var failed []*driver.Workflow
	for id := range d.wfIDs {
		w, err := d.c.Workflow(ctx, id)
		if err != nil {
			return err
		}
		switch w.Status {
		case queuetytype.WorkflowCompleted:
			completedWfs++
		case queuetytype.WorkflowFailed:
			failed = append(failed, w)
		}
	}
	slices.SortFunc(failed, func(a, b *driver.Workflow) int { return cmp.Compare(a.ID, b.ID) })
	buried, err := d.countJobs(ctx, queuetytype.JobBuried)
	if err != nil {
		return err
	}
	d.mu.Lock()
	jobWindow := d.lastFirstTry.Sub(start)
	d.mu.Unlock()
	firstTry, steps := d.jobsFirstTry.Load(), d.stepsDone.Load()

	hint := d.prog + " --dsn " + d.hintDSN
	hints := []string{hint + " status", hint + " workflow list"}
	if d.deadlineID != 0 {
		hints = append(hints, fmt.Sprintf("%s workflow inspect %d", hint, d.deadlineID))
	}
	hints = append(hints, fmt.Sprintf("%s job list --queue %s --limit 10", hint, demoQueue))

	if d.e.Globals.JSON {
		info := d.c.StoreInfo()
		r := demoReport{
			DSN:            redactDSN(d.dsn),
			Store:          demoStore{Driver: info.Driver, Server: info.Server, Address: info.Address},
			Queue:          demoQueue,
			Concurrency:    demoConcurrency,
			ElapsedSeconds: elapsed.Seconds(),
			Jobs:           demoJobCounts{Dispatched: d.jobs, Done: d.jobsDone.Load(), FailedAttempts: d.failedAttempts.Load(), Buried: buried},
			Workflows:      demoWfCounts{Dispatched: d.workflows, Completed: completedWfs, Failed: len(failed), Steps: steps},
			Callbacks:      d.callbacks.Load(),
			Interesting:    map[string]int64{},
			Hints:          hints,
			Failed:         []demoFailedWfRow{},
		}
		if firstTry > 0 && jobWindow > 0 {
			r.JobWindowSeconds = jobWindow.Seconds()
			r.JobsPerSecond = float64(firstTry) / jobWindow.Seconds()
		}
		if steps > 0 {
			r.StepsPerSecond = float64(steps) / elapsed.Seconds()
		}
		for name, id := range map[string]int64{"deadline": d.deadlineID, "sleep": d.sleepID, "signal": d.approvalID} {
			if id != 0 {
				r.Interesting[name] = id
			}
		}
		for _, w := range failed {
			r.Failed = append(r.Failed, demoFailedWfRow{ID: w.ID, Name: w.Name, Error: w.ErrorMessage})
		}
		return printJSON(d.e.Stdout, r)
	}

	d.printf("\nSummary (%s)\n", elapsed.Round(10*time.Millisecond))
	tw := newTable(d.out)
	jobsLine := fmt.Sprintf("%d of %d done", d.jobsDone.Load(), d.jobs)
	if n := d.failedAttempts.Load(); n > 0 {
		jobsLine += fmt.Sprintf(" (%s, retried)", plural(n, "failed attempt"))
	}
	fmt.Fprintf(tw, "  jobs\t%s\n", jobsLine)
	if buried > 0 {
		fmt.Fprintf(tw, "  buried\t%d (the step jobs of failed workflows, and jobs out of attempts)\n", buried)
	}
	fmt.Fprintf(tw, "  workflows\t%d completed, %d failed\n", completedWfs, len(failed))
	for _, w := range failed {
		fmt.Fprintf(tw, "  failed\tworkflow %d (%s): %s\n", w.ID, w.Name, w.ErrorMessage)
	}
	if d.callbacks.Load() > 0 {
		fmt.Fprintf(tw, "  callbacks\t%s ran\n", plural(d.callbacks.Load(), "on-deadline callback"))
	}
	var rates []string
	if firstTry > 0 && jobWindow > 0 {
		rates = append(rates, fmt.Sprintf("%d jobs in %s = %.0f jobs/s", firstTry, jobWindow.Round(time.Millisecond), float64(firstTry)/jobWindow.Seconds()))
	}
	if steps > 0 {
		rates = append(rates, fmt.Sprintf("%d workflow steps in %s = %.1f steps/s (the run includes the %s timers)",
			steps, elapsed.Round(10*time.Millisecond), float64(steps)/elapsed.Seconds(), demoDelay))
	}
	if len(rates) > 0 {
		fmt.Fprintf(tw, "  throughput\t%s\n", strings.Join(rates, "; "))
	}
	tw.Flush()

	d.printf("\nThe database is kept; look around:\n")
	for _, h := range hints {
		d.printf("  %s\n", h)
	}
	return nil
}
