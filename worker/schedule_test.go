package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestRunTicksSchedulesWhenDue checks that a long-running worker fires a
// schedule at its due time, not on a fixed 30 s or 60 s tick: a schedule
// due every 2 s fires three times within a few seconds.
func TestRunTicksSchedulesWhenDue(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Schedule("beat", nil).Every(2 * time.Second).Save(ctx); err != nil {
		t.Fatal(err)
	}
	ran := make(chan time.Time, 10)
	w := worker.New(c, worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleJob("beat", func(context.Context, queuety.Payload) error { ran <- time.Now(); return nil })
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(runCtx) }()
	var times []time.Time
	timeout := time.After(20 * time.Second)
	for len(times) < 3 {
		select {
		case at := <-ran:
			times = append(times, at)
		case <-timeout:
			t.Fatalf("fired %d times in 20 s", len(times))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := times[2].Sub(start); took > 10*time.Second {
		t.Fatalf("three firings of a 2 s schedule took %s", took)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < time.Second || gap > 4*time.Second {
			t.Fatalf("gap between firings %d and %d: %s", i-1, i, gap)
		}
	}
}
