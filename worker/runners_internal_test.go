package worker

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Jobs whose handlers wait for each other all start: no job waits behind
// a running one.
func TestRunnersStartEveryJobAtOnce(t *testing.T) {
	var r runners
	const n = 200
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		r.start(func() {
			defer done.Done()
			started.Done()
			<-release // returns only once all n have started
		})
	}
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	select {
	case <-allStarted:
	case <-time.After(30 * time.Second):
		t.Fatal("jobs queued behind running handlers did not start")
	}
	close(release)
	done.Wait()
	require.Eventually(t, func() bool { return r.idleRunners() == 0 }, 10*time.Second, time.Millisecond, "runners exit when nothing is queued")
}

// A burst of quick jobs runs on far fewer goroutines than jobs.
func TestRunnersReuseGoroutinesForQuickJobs(t *testing.T) {
	var r runners
	const n = 10000
	var done sync.WaitGroup
	done.Add(n)
	var ran atomic.Int64
	for range n {
		r.start(func() {
			defer done.Done()
			ran.Add(1)
		})
	}
	done.Wait()
	assert.Equal(t, int64(n), ran.Load())
	r.mu.Lock()
	spawned := r.spawned
	r.mu.Unlock()
	assert.Less(t, spawned, n/10, "runners started for %d quick jobs", n)
	t.Logf("%d quick jobs ran on %d runners", n, spawned)
}

// A job that ends its goroutine (runtime.Goexit, as t.FailNow does)
// takes its runner with it, but not the jobs queued behind it.
func TestRunnersSurviveGoexit(t *testing.T) {
	var r runners
	var done sync.WaitGroup
	done.Add(3)
	block := make(chan struct{})
	r.start(func() { defer done.Done(); <-block; runtime.Goexit() })
	r.start(func() { defer done.Done() })
	r.start(func() { defer done.Done() })
	close(block)
	done.Wait()
	var after sync.WaitGroup
	after.Add(1)
	r.start(func() { after.Done() })
	after.Wait()
	require.Eventually(t, func() bool { return r.idleRunners() == 0 }, 10*time.Second, time.Millisecond)
}

// idleRunners counts the runners alive (for tests).
func (r *runners) idleRunners() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}
