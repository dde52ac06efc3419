package storetest

// This file holds the acceptance suite's environment: a database, a fake
// clock and a queuety.Client on it, and the helpers the scenarios share.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Epoch is the fake clock's starting time in every case.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Env is one case's setup: a database, a fake clock and a client on it.
type Env struct {
	T     *testing.T
	Ctx   context.Context
	DSN   string
	Clock *queuety.FakeClock
	C     *queuety.Client
	H     Harness
	eng   *engine.Engine // C's engine: the scenarios claim and record results through it
}

// NewEnv opens a fresh database with a fake clock at Epoch.
func NewEnv(t *testing.T, h Harness) *Env {
	t.Helper()
	e := &Env{T: t, Ctx: context.Background(), DSN: h.DSN(t), Clock: queuety.NewFakeClock(Epoch), H: h}
	e.C = e.Client()
	e.eng = clientseam.Engine(e.C)
	return e
}

// Client opens another client on the same database (its own connections)
// sharing the fake clock.
func (e *Env) Client(opts ...queuety.Option) *queuety.Client {
	e.T.Helper()
	all := append([]queuety.Option{queuety.WithClock(e.Clock), queuety.WithLogger(quietLogger())}, opts...)
	c, err := queuety.Open(e.Ctx, e.DSN, all...)
	require.NoErrorf(e.T, err, "open %s", e.DSN)
	e.T.Cleanup(func() { c.Close() })
	return c
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Worker returns a worker on c (e.C when nil) without periodic
// maintenance; tests call sweeps explicitly.
func (e *Env) Worker(c *queuety.Client, opts ...worker.Option) *worker.Worker {
	if c == nil {
		c = e.C
	}
	all := append([]worker.Option{worker.NoMaintenance(), worker.Concurrency(4), worker.WithLogger(quietLogger()),
		worker.ShutdownTimeout(5 * time.Second)}, opts...)
	return worker.New(c, all...)
}

// Drain runs w once until nothing is due.
func (e *Env) Drain(w *worker.Worker) worker.Stats {
	e.T.Helper()
	st, err := w.RunOnce(e.Ctx, time.Minute)
	require.NoError(e.T, err, "RunOnce")
	return st
}

// Claim claims up to n jobs of the given handlers from queue "default".
func (e *Env) Claim(n int, handlers ...string) []*engine.Claimed {
	e.T.Helper()
	return e.ClaimFrom(e.C, []string{queuetytype.DefaultQueue}, n, handlers...)
}

// ClaimOne claims one job of handler from queue "default" and fails unless
// there was one. It returns the claim as a one-element slice, as Complete,
// Release and RenewLeases take it.
func (e *Env) ClaimOne(handler string) []*engine.Claimed {
	e.T.Helper()
	jobs := e.Claim(1, handler)
	require.Lenf(e.T, jobs, 1, "claim of %s: found no due job", handler)
	return jobs
}

// Clients opens n more clients on the database, for concurrency cases. They
// are all open before the caller starts any goroutine, so a failed open
// never ends the test while goroutines still use it.
func (e *Env) Clients(n int) []*queuety.Client {
	e.T.Helper()
	out := make([]*queuety.Client, n)
	for i := range out {
		out[i] = e.Client()
	}
	return out
}

// ClaimFrom claims with client c from queues.
func (e *Env) ClaimFrom(c *queuety.Client, queues []string, n int, handlers ...string) []*engine.Claimed {
	e.T.Helper()
	jobs, err := clientseam.Engine(c).Claim(e.Ctx, engine.ClaimRequest{Queues: queues, Handlers: handlers, Limit: n})
	require.NoError(e.T, err, "claim")
	return jobs
}

// Dispatch dispatches one job and returns its id.
func (e *Env) Dispatch(handler string, payload any, opts ...queuety.JobOption) int64 {
	e.T.Helper()
	id, err := e.C.Dispatch(e.Ctx, handler, payload, opts...)
	require.NoErrorf(e.T, err, "dispatch %s", handler)
	return id
}

// Job reads a job row.
func (e *Env) Job(id int64) *driver.Job {
	e.T.Helper()
	j, err := e.C.Job(e.Ctx, id)
	require.NoErrorf(e.T, err, "read job %d", id)
	return j
}

// Workflow reads a workflow row.
func (e *Env) Workflow(id int64) *driver.Workflow {
	e.T.Helper()
	wf, err := e.C.Workflow(e.Ctx, id)
	require.NoErrorf(e.T, err, "read workflow %d", id)
	return wf
}

// Jobs lists the jobs matching f.
func (e *Env) Jobs(f driver.JobFilter) []*driver.Job {
	e.T.Helper()
	jobs, err := e.C.ListJobs(e.Ctx, f)
	require.NoErrorf(e.T, err, "list jobs %+v", f)
	return jobs
}

// OneJob returns the only job matching f, or fails.
func (e *Env) OneJob(f driver.JobFilter) *driver.Job {
	e.T.Helper()
	jobs := e.Jobs(f)
	require.Lenf(e.T, jobs, 1, "jobs matching %+v", f)
	return jobs[0]
}

// Workflows lists the workflows matching f.
func (e *Env) Workflows(f driver.WorkflowFilter) []*driver.Workflow {
	e.T.Helper()
	wfs, err := e.C.ListWorkflows(e.Ctx, f)
	require.NoErrorf(e.T, err, "list workflows %+v", f)
	return wfs
}

// Logs returns the log events of a job (or workflow when job is 0), in order.
func (e *Env) Logs(f driver.LogFilter) []*driver.LogEntry {
	e.T.Helper()
	logs, err := e.C.Logs(e.Ctx, f)
	require.NoError(e.T, err, "logs")
	return logs
}

// Events lists the log event names of a filter, in order.
func (e *Env) Events(f driver.LogFilter) []string {
	var out []string
	for _, l := range e.Logs(f) {
		out = append(out, string(l.Event))
	}
	return out
}

// Complete records success for claimed plain jobs.
func (e *Env) Complete(jobs ...*engine.Claimed) []error {
	e.T.Helper()
	rs := make([]*engine.Result, len(jobs))
	for i, j := range jobs {
		rs[i] = &engine.Result{Claimed: j, StartedAt: e.Clock.Now()}
	}
	errs, err := e.eng.CompleteJobs(e.Ctx, rs)
	require.NoError(e.T, err, "complete")
	return errs
}

// completeAll completes claimed jobs and fails unless they are exactly the
// jobs want, in order, and every completion succeeded.
func (e *Env) completeAll(jobs []*engine.Claimed, want ...int64) {
	e.T.Helper()
	assert.Equal(e.T, want, IDs(jobs), "claimed")
	for i, err := range e.Complete(jobs...) {
		require.NoErrorf(e.T, err, "complete job %d", jobs[i].Job.ID)
	}
}

// Fail records a failed attempt.
func (e *Env) Fail(cj *engine.Claimed, cause error) error {
	return e.eng.Finish(e.Ctx, &engine.Result{Claimed: cj, Err: cause, StartedAt: e.Clock.Now()})
}

// IDs returns the job ids of claimed jobs, in claim order.
func IDs(jobs []*engine.Claimed) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.Job.ID
	}
	return out
}
