// Command site-index runs a workflow that uses every kind of step the
// engine has, on Go workers alone: it plans the pages of a site, indexes
// them in parallel branches (for_each) and folds the results with a
// reducer, polls a search cluster until it is ready (repeat), publishes the
// index in a child workflow (run_workflow), starts one notification
// workflow per subscriber (start_workflows) and waits for all of them
// (wait_for_workflow_group).
//
//	go run ./examples/site-index
//	go run ./examples/site-index -dsn 'mysql://root@127.0.0.1:3306/scratch?prefix=wp_'
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
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// pages is the site the planner finds; subscribers get a notification each.
var (
	pages       = []string{"/", "/pricing", "/docs", "/blog", "/about"}
	subscribers = []string{"ana@example.com", "bo@example.com", "cy@example.com"}
)

func main() {
	dsn := flag.String("dsn", "", "store DSN (default: a SQLite file in a temporary directory)")
	queue := flag.String("queue", "site_index_demo", "queue for the demo's jobs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *dsn, *queue); err != nil {
		fmt.Fprintln(os.Stderr, "site-index:", err)
		os.Exit(1)
	}
}

// siteIndex is the workflow: every step type the engine runs.
func siteIndex(queue string) *builder.Builder {
	publish := builder.Workflow("publish_index").
		Then("upload_index").
		Then("swap_alias").
		OnQueue(queue)
	notify := builder.Workflow("notify_subscriber").
		Then("send_notification").
		OnQueue(queue)
	return builder.Workflow("site_index").
		Then("plan_pages").
		ForEach("pages", "index_page",
			builder.Name("index_pages"), builder.ResultKey("indexed"), builder.Reducer("summarize_index"), builder.Retry(3, queuety.BackoffSeconds(0))).
		Then("check_cluster", builder.Name("check_cluster")).
		RepeatUntil("check_cluster", builder.StateIs("cluster_ready", true), builder.MaxIterations(5)).
		RunWorkflow("publish_index", publish).
		StartWorkflows("subscribers", notify, builder.PayloadKey("email"), builder.Group("notifications"),
			builder.ResultKey("notification_ids"), builder.InheritState(false)).
		WaitForWorkflowGroup("notifications", builder.ResultKey("notified")).
		Then("report").
		MaxForEachItems(100).
		OnQueue(queue)
}

// register adds the workflow's handlers to a worker.
func register(w *worker.Worker, say func(string, ...any)) {
	w.HandleStep("plan_pages", func(_ context.Context, s queuety.State) (queuety.State, error) {
		say("plan_pages        found %d pages", len(pages))
		list := make([]any, len(pages))
		for i, p := range pages {
			list[i] = map[string]any{"path": p}
		}
		return queuety.State{"pages": list, "subscribers": subscribers}, nil
	})
	w.HandleForEach("index_page", func(ctx context.Context, s queuety.State, item any, index int) (queuety.State, error) {
		page, _ := item.(map[string]any)
		path, _ := page["path"].(string)
		if info, ok := queuety.JobInfoFrom(ctx); ok && path == "/docs" && info.Attempt == 1 {
			say("index_page        %-9s attempt 1 failed (the page timed out), retried", path)
			return nil, errors.New("fetch /docs: timeout")
		}
		words := 100 * (len(path) + index)
		say("index_page        %-9s %d words", path, words)
		return queuety.State{"path": path, "words": words}, nil
	})
	w.HandleReducer("summarize_index", func(_ context.Context, s queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		total := 0
		for _, b := range r.Results {
			n, _ := b.Output["words"].(int64)
			total += int(n)
		}
		say("summarize_index   %d of %d pages, %d words", r.Succeeded, r.Total, total)
		return queuety.State{"pages_indexed": r.Succeeded, "words_indexed": total}, nil
	})
	w.HandleStep("check_cluster", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("cluster_checks")
		n++
		ready := n >= 3
		say("check_cluster     check %d: ready=%v", n, ready)
		return queuety.State{"cluster_checks": n, "cluster_ready": ready}, nil
	})
	w.HandleStep("upload_index", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("words_indexed")
		say("upload_index      (child workflow) uploaded %d words", n)
		return queuety.State{"index_version": "v42"}, nil
	})
	w.HandleStep("swap_alias", func(_ context.Context, s queuety.State) (queuety.State, error) {
		say("swap_alias        (child workflow) alias site -> %s", s.String("index_version"))
		return queuety.State{"published": true}, nil
	})
	w.HandleStep("send_notification", func(_ context.Context, s queuety.State) (queuety.State, error) {
		say("send_notification (started workflow) to %s", s.String("email"))
		return queuety.State{"sent_to": s.String("email")}, nil
	})
	w.HandleStep("report", func(_ context.Context, s queuety.State) (queuety.State, error) {
		notified, _ := s["notified"].(map[string]any)
		say("report            %v pages, published=%v, %d notifications", s["pages_indexed"], s["published"], len(notified))
		return queuety.State{"reported": true}, nil
	})
}

func run(ctx context.Context, out io.Writer, dsn, queue string) error {
	start := time.Now()
	var mu sync.Mutex // handlers run concurrently
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "[%4.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if dsn == "" {
		dir, err := os.MkdirTemp("", "queuety-site-index-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsn = "sqlite://" + filepath.Join(dir, "queuety.db")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	q, err := queuety.Open(ctx, dsn, queuety.WithLogger(logger))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer q.Close()

	w := worker.New(q, worker.Queues(queue), worker.Concurrency(4), worker.PollInterval(20*time.Millisecond),
		worker.WithLogger(logger), worker.ShutdownTimeout(5*time.Second))
	register(w, say)

	id, err := siteIndex(queue).Dispatch(ctx, q, queuety.State{"site": "example.com"})
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	say("dispatched        workflow %d", id)

	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	done := make(chan error, 1)
	go func() { done <- w.Run(workerCtx) }()
	err = waitFor(ctx, q, id)
	stopWorker()
	if werr := <-done; err == nil {
		err = werr
	}
	if err != nil {
		return err
	}

	d, err := q.DescribeWorkflow(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nworkflow %d: %s\n", id, d.Status)
	for _, s := range d.Steps {
		line := fmt.Sprintf("  %d %-28s %-19s %s", s.Index, s.Name, s.Type, s.Status)
		switch {
		case s.ForEach != nil:
			line += fmt.Sprintf("  %d/%d branches succeeded", s.ForEach.Succeeded, s.ForEach.Items)
		case s.Iterations != nil:
			line += fmt.Sprintf("  jumped back %d times", *s.Iterations)
		case len(s.Children) > 0:
			var kids []string
			for _, k := range s.Children {
				kids = append(kids, fmt.Sprintf("%d %s %s", k.ID, k.Name, k.Status))
			}
			line += "  children: " + strings.Join(kids, ", ")
		}
		fmt.Fprintln(out, line)
	}
	state, err := q.State(ctx, id)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(state))
	for k := range state {
		if k != "indexed" && k != "notified" && k != "pages" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, _ := json.Marshal(state[k])
		fmt.Fprintf(out, "  state.%s = %s\n", k, b)
	}
	if d.Status != queuetytype.WorkflowCompleted {
		return fmt.Errorf("workflow %d ended %s: %s", id, d.Status, d.Error)
	}
	return nil
}

// waitFor polls until the workflow has ended.
func waitFor(ctx context.Context, q *queuety.Client, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		wf, err := q.Workflow(ctx, id)
		if err != nil {
			return err
		}
		if wf.Status.Terminal() {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the workflow did not finish within a minute")
		case <-tick.C:
		}
	}
}
