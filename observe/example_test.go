package observe_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// outcomes counts attempts by outcome; embedding Nop supplies the methods
// it does not need.
type outcomes struct {
	observe.Nop
	mu sync.Mutex
	n  map[observe.Outcome]int
}

func (o *outcomes) JobEnd(_ context.Context, j observe.Job, e observe.Ended) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[e.Outcome]++
}

// An observer that counts how attempts ended: a job that fails once and
// then completes.
func Example() {
	ctx := context.Background()
	obs := &outcomes{n: map[observe.Outcome]int{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet), queuety.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer q.Close()
	if _, err := q.Dispatch(ctx, "flaky", nil, queuety.Retry(2, queuety.BackoffSeconds(0))); err != nil {
		panic(err)
	}
	w := worker.New(q, worker.WithLogger(quiet))
	w.HandleJob("flaky", func(ctx context.Context, _ queuety.Payload) error {
		if info, _ := queuety.JobInfoFrom(ctx); info.Attempt == 1 {
			return fmt.Errorf("try again")
		}
		return nil
	})
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		panic(err)
	}
	fmt.Println("retried:", obs.n[observe.OutcomeRetried], "completed:", obs.n[observe.OutcomeCompleted])
	// Output: retried: 1 completed: 1
}
