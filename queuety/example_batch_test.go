package queuety_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// A batch of three jobs, one of which fails: the catch callback runs once
// at the first failure, then (with AllowFailures) and finally once when the
// last job ends.
func ExampleClient_NewBatch() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	if err != nil {
		panic(err)
	}
	defer q.Close()

	id, err := q.NewBatch(
		queuety.JobRequest{Handler: "import_chunk", Payload: queuety.State{"chunk": 1}},
		queuety.JobRequest{Handler: "import_chunk", Payload: queuety.State{"chunk": 2}},
		queuety.JobRequest{Handler: "import_chunk", Payload: queuety.State{"chunk": 3}},
	).Name("import").Then("import_done").Catch("import_failed").Finally("import_cleanup").AllowFailures().Dispatch(ctx)
	if err != nil {
		panic(err)
	}

	w := worker.New(q, worker.Concurrency(1), worker.WithLogger(quiet()))
	w.HandleJob("import_chunk", func(ctx context.Context, p queuety.Payload) error {
		if n, _ := p.Int("chunk"); n == 2 {
			return queuety.NonRetryable(errors.New("bad chunk"))
		}
		return nil
	})
	for _, name := range []string{"import_done", "import_failed", "import_cleanup"} {
		w.HandleBatchCallback(name, func(ctx context.Context, b *queuety.Batch) error {
			fmt.Printf("%s (%s): failed jobs %v\n", name, b.Event, b.FailedJobIDs)
			return nil
		})
	}
	// One RunOnce runs the jobs; the callbacks they enqueued run as jobs
	// too (in the same drain or the next).
	for range 2 {
		if _, err := w.RunOnce(ctx, time.Minute); err != nil {
			panic(err)
		}
	}
	b, _ := q.Batch(ctx, id)
	fmt.Printf("finished %v, %d%% done, %d of %d failed\n", b.Finished(), b.Progress(), b.FailedJobs, b.TotalJobs)
	// Unordered output:
	// import_failed (catch): failed jobs [2]
	// import_done (then): failed jobs [2]
	// import_cleanup (finally): failed jobs [2]
	// finished true, 100% done, 1 of 3 failed
}

// A chain runs its jobs one after another; when one is buried the chain
// stops there and its catch handler runs once.
func ExampleClient_Chain() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	if err != nil {
		panic(err)
	}
	defer q.Close()

	ids, err := q.Chain(
		queuety.JobRequest{Handler: "fetch_feed"},
		queuety.JobRequest{Handler: "parse_feed"},
		queuety.JobRequest{Handler: "publish_feed"},
	).Catch("feed_failed").DispatchIDs(ctx)
	if err != nil {
		panic(err)
	}

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("fetch_feed", func(context.Context, queuety.Payload) error { fmt.Println("fetch"); return nil })
	w.HandleJob("parse_feed", func(context.Context, queuety.Payload) error {
		return queuety.NonRetryable(errors.New("malformed feed"))
	})
	w.HandleJob("publish_feed", func(context.Context, queuety.Payload) error { fmt.Println("publish"); return nil })
	w.HandleChainCatch("feed_failed", func(ctx context.Context, f queuety.ChainFailure) error {
		fmt.Printf("chain stopped at %s: %s\n", f.Handler, f.Error)
		return nil
	})
	for range 3 {
		if _, err := w.RunOnce(ctx, time.Minute); err != nil {
			panic(err)
		}
	}
	last, _ := q.Job(ctx, ids[2])
	fmt.Println("publish_feed:", last.Status)
	// Output:
	// fetch
	// chain stopped at parse_feed: malformed feed
	// publish_feed: pending
}
