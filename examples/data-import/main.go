// Command data-import runs the Queuety documentation's data-import
// workflow (fetch, transform, load, with a deadline and a deadline
// callback) twice: a small export that finishes in time, and a large one
// whose load step overruns the deadline.
//
//	go run ./examples/data-import
//	go run ./examples/data-import -dsn 'mysql://root@127.0.0.1:3306/scratch?prefix=wp_'
//
// By default it uses a SQLite file in a temporary directory, removed at the
// end. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// The demo's timing: every import must finish within deadline; loading
// takes rowTime per row, so the small export (3 rows) fits and the large
// one (40 rows, 10 s) does not.
const (
	deadlineSeconds = 3
	rowTime         = 250 * time.Millisecond
	giveUpAfter     = 12 * time.Second
)

// exports are the files the fetch step "downloads": name → row count.
var exports = map[string]int{"orders.csv": 3, "events.csv": 40}

func main() {
	dsn := flag.String("dsn", "", "store DSN (default: a SQLite file in a temporary directory), e.g. mysql://user:pass@127.0.0.1:3306/db?prefix=wp_")
	queue := flag.String("queue", "data_import_demo", "queue for the demo's jobs")
	verbose := flag.Bool("v", false, "show the worker's info logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dsn, *queue, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "data-import:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dsn, queue string, verbose bool) error {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Printf("[%4.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if dsn == "" {
		dir, err := os.MkdirTemp("", "queuety-data-import-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsn = "sqlite://" + filepath.Join(dir, "queuety.db")
	}
	q, err := queuety.Open(ctx, dsn, queuety.WithLogger(logger))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer q.Close()
	info := q.StoreInfo()
	fmt.Printf("store: %s %s (%s), queue %q\n", info.Driver, info.Address, info.Server, queue)

	// The worker: three steps and the deadline callback. The deadline sweep
	// runs every second instead of every minute, so the demo is short.
	w := worker.New(q,
		worker.Queues(queue),
		worker.Concurrency(4),
		worker.PollInterval(100*time.Millisecond),
		worker.ShutdownTimeout(5*time.Second),
		worker.Maintenance(worker.Intervals{Deadlines: time.Second}),
	)
	w.HandleStep("fetch_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		source := s.String("source")
		rows, ok := exports[source]
		if !ok {
			return nil, queuety.NonRetryable(fmt.Errorf("unknown export %q", source))
		}
		say("fetch_data     workflow %d: fetched %d rows from %s", workflowID(ctx), rows, source)
		return queuety.State{"fetched_rows": rows}, nil
	})
	w.HandleStep("transform_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		rows, _ := s.Int("fetched_rows")
		say("transform_data workflow %d: transformed %d rows", workflowID(ctx), rows)
		return queuety.State{"transformed_rows": rows}, nil
	})
	w.HandleStep("load_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		rows, _ := s.Int("transformed_rows")
		say("load_data      workflow %d: loading %d rows (%s each)", workflowID(ctx), rows, rowTime)
		for i := range rows {
			select {
			case <-ctx.Done():
				// The step's ctx ends when the workflow passes its deadline.
				say("load_data      workflow %d: stopped after %d of %d rows: %v", workflowID(ctx), i, rows, context.Cause(ctx))
				return nil, context.Cause(ctx)
			case <-time.After(rowTime):
			}
		}
		say("load_data      workflow %d: loaded %d rows", workflowID(ctx), rows)
		return queuety.State{"loaded_rows": rows}, nil
	})
	var (
		mu             sync.Mutex
		deadlineStates []queuety.State
		deadlineCalled = make(chan struct{}, len(exports))
	)
	w.HandleDeadline("import_timeout", func(ctx context.Context, s queuety.State) error {
		say("import_timeout deadline handler called")
		mu.Lock()
		deadlineStates = append(deadlineStates, s)
		mu.Unlock()
		deadlineCalled <- struct{}{}
		return nil
	})

	// One definition, dispatched once per export.
	dataImport := builder.Workflow("data_import").
		Then("fetch_data").
		Then("transform_data", builder.StartToClose(5*time.Minute), builder.Retry(3)).
		Then("load_data").
		MustCompleteWithin(0, 0, 0, deadlineSeconds).
		OnDeadline("import_timeout").
		OnQueue(queue)

	sources := []string{"orders.csv", "events.csv"}
	ids := make([]int64, len(sources))
	for i, source := range sources {
		id, err := dataImport.Dispatch(ctx, q, queuety.State{"source": source})
		if err != nil {
			return fmt.Errorf("dispatch %s: %w", source, err)
		}
		ids[i] = id
		say("dispatched     workflow %d: import %s (%d rows), must complete within %ds", id, source, exports[source], deadlineSeconds)
	}

	// Run the worker until both workflows have ended and every deadline
	// callback has run.
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(workerCtx) }()

	expired, err := waitForWorkflows(ctx, q, ids)
	if err == nil && expired > 0 {
		err = waitForCalls(ctx, deadlineCalled, expired)
	}
	stopWorker()
	if werr := <-workerDone; werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}

	fmt.Println()
	for i, id := range ids {
		wf, err := q.Workflow(ctx, id)
		if err != nil {
			return err
		}
		state, err := q.State(ctx, id)
		if err != nil {
			return err
		}
		switch wf.Status {
		case queuetytype.WorkflowCompleted:
			fmt.Printf("workflow %d (%s): completed, %d of %d steps\n", id, sources[i], wf.CurrentStep, wf.TotalSteps)
		default:
			fmt.Printf("workflow %d (%s): %s at step %d of %d: %s\n", id, sources[i], wf.Status, wf.CurrentStep+1, wf.TotalSteps, wf.ErrorMessage)
		}
		fmt.Printf("  final state: %s\n", jsonText(state))
	}
	mu.Lock()
	for _, s := range deadlineStates {
		fmt.Printf("deadline handler called with %s\n", jsonText(s))
	}
	mu.Unlock()
	fmt.Printf("done in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// waitForWorkflows polls until every workflow is terminal and returns how
// many of them failed on their deadline.
func waitForWorkflows(ctx context.Context, q *queuety.Client, ids []int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, giveUpAfter)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		expired, done := 0, true
		for _, id := range ids {
			wf, err := q.Workflow(ctx, id)
			if err != nil {
				return 0, err
			}
			done = done && wf.Status.Terminal()
			if wf.ErrorMessage == queuetytype.ErrDeadlineExceeded.Error() {
				expired++
			}
		}
		if done {
			return expired, nil
		}
		select {
		case <-ctx.Done():
			return 0, errors.New("the workflows did not finish in time")
		case <-tick.C:
		}
	}
}

// waitForCalls waits until the deadline handler has run n times.
func waitForCalls(ctx context.Context, called <-chan struct{}, n int) error {
	ctx, cancel := context.WithTimeout(ctx, giveUpAfter)
	defer cancel()
	for range n {
		select {
		case <-called:
		case <-ctx.Done():
			return errors.New("the deadline handler was not called")
		}
	}
	return nil
}

func workflowID(ctx context.Context) int64 {
	info, _ := queuety.JobInfoFrom(ctx)
	return info.WorkflowID
}

// jsonText renders a state with sorted keys.
func jsonText(s queuety.State) string {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Sprint(s)
	}
	return string(b)
}
