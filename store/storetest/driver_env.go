package storetest

// This file holds the driver suite's environment: a migrated store on a
// fresh database, with helpers that run one row operation per
// transaction and the row fixtures the cases share.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

var driverCases registry[*DriverEnv]

// registerDriver adds a driver-suite case.
func registerDriver(name string, run func(t *testing.T, d *DriverEnv)) { driverCases.add(name, run) }

// RunDriver runs the driver suite: every case as a parallel subtest, each
// on its own database. The cases call the driver.Tx operations directly,
// without the engine, and check what each one's doc comment promises.
func RunDriver(t *testing.T, h Harness) {
	driverCases.run(t, func(t *testing.T) *DriverEnv { return NewDriverEnv(t, h) })
}

// DriverEnv is one driver case's setup: a migrated store on a fresh
// database.
type DriverEnv struct {
	T   *testing.T
	Ctx context.Context
	H   Harness
	DSN string
	S   driver.Store
}

// NewDriverEnv opens and migrates a store on a fresh database.
func NewDriverEnv(t *testing.T, h Harness) *DriverEnv {
	t.Helper()
	d := &DriverEnv{T: t, Ctx: context.Background(), H: h, DSN: h.DSN(t)}
	d.S = d.Open()
	return d
}

// Open opens another store on the same database (its own connections),
// closed when the case ends.
func (d *DriverEnv) Open() driver.Store {
	d.T.Helper()
	return openStore(d.T, d.Ctx, d.DSN)
}

func openStore(tb testing.TB, ctx context.Context, dsn string) driver.Store {
	tb.Helper()
	s, err := driver.Open(ctx, dsn)
	require.NoError(tb, err, "open store")
	tb.Cleanup(func() { s.Close() })
	require.NoError(tb, s.Migrate(ctx), "migrate")
	return s
}

// Tx runs fn in one transaction and fails the case when it returns an
// error.
func (d *DriverEnv) Tx(fn func(tx driver.Tx) error) {
	d.T.Helper()
	require.NoError(d.T, d.S.InTx(d.Ctx, fn))
}

// TxErr runs fn in one transaction and returns its error, for cases that
// expect one.
func (d *DriverEnv) TxErr(fn func(tx driver.Tx) error) error {
	return d.S.InTx(d.Ctx, fn)
}

// inTx runs fn in one transaction and returns its result, failing the
// case on an error.
func inTx[T any](d *DriverEnv, fn func(tx driver.Tx) (T, error)) T {
	d.T.Helper()
	var out T
	d.Tx(func(tx driver.Tx) (err error) {
		out, err = fn(tx)
		return err
	})
	return out
}

// newJob returns a pending job row as the engine writes one: handler h in
// queue q, due at Epoch, with three attempts.
func newJob(q, h string) *driver.Job {
	return &driver.Job{Queue: q, Handler: h, Payload: []byte(`{}`), Status: driver.JobPending, MaxAttempts: 3,
		AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1}
}

// insertJobs inserts jobs in one JobInsert and returns their ids.
func (d *DriverEnv) insertJobs(jobs ...*driver.Job) []int64 {
	d.T.Helper()
	d.Tx(func(tx driver.Tx) error { return tx.JobInsert(d.Ctx, jobs) })
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		require.NotZerof(d.T, j.ID, "id of inserted job %d", i)
		ids[i] = j.ID
	}
	return ids
}

// insertJob inserts one job and returns its id.
func (d *DriverEnv) insertJob(j *driver.Job) int64 {
	d.T.Helper()
	return d.insertJobs(j)[0]
}

// job reads a job row.
func (d *DriverEnv) job(id int64) *driver.Job {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) (*driver.Job, error) { return tx.JobGet(d.Ctx, id, driver.LockNone) })
}

// updateJob reads a job, applies change and writes it with JobUpdate.
func (d *DriverEnv) updateJob(id int64, change func(j *driver.Job)) {
	d.T.Helper()
	d.Tx(func(tx driver.Tx) error {
		j, err := tx.JobGet(d.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		change(j)
		return tx.JobUpdate(d.Ctx, j)
	})
}

// claim runs one JobClaim.
func (d *DriverEnv) claim(p driver.ClaimParams) []*driver.Job {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobClaim(d.Ctx, p) })
}

// claimParams claims up to limit jobs of handlers from queue q at now with
// token 7.
func claimParams(q string, now time.Time, limit int, handlers ...string) driver.ClaimParams {
	return driver.ClaimParams{Queue: q, Handlers: handlers, Limit: limit, Now: now, Token: 7 << 8}
}

// hasDue runs one JobHasDue.
func (d *DriverEnv) hasDue(p driver.ClaimParams) bool {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) (bool, error) { return tx.JobHasDue(d.Ctx, p) })
}

// newWorkflow returns a workflow row in status s started at Epoch.
func newWorkflow(name string, s driver.WorkflowStatus) *driver.Workflow {
	return &driver.Workflow{Name: name, Status: s, State: []byte(`{"_steps":[]}`), TotalSteps: 1, StartedAt: Epoch, RunNumber: 1}
}

// insertWorkflow inserts a workflow and returns its id.
func (d *DriverEnv) insertWorkflow(wf *driver.Workflow) int64 {
	d.T.Helper()
	d.Tx(func(tx driver.Tx) error { return tx.WorkflowInsert(d.Ctx, wf) })
	require.NotZero(d.T, wf.ID, "id of the inserted workflow")
	return wf.ID
}

// workflow reads a workflow row.
func (d *DriverEnv) workflow(id int64) *driver.Workflow {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) (*driver.Workflow, error) { return tx.WorkflowGet(d.Ctx, id, driver.LockNone) })
}

// newSchedule returns an enabled interval schedule of handler h due at next.
func newSchedule(h string, next time.Time) *driver.Schedule {
	return &driver.Schedule{Handler: h, Payload: []byte(`{}`), Queue: driver.DefaultQueue, Expression: "60 seconds",
		ExpressionType: driver.ScheduleInterval, NextRun: next, Overlap: driver.OverlapAllow, Enabled: true, CreatedAt: Epoch}
}

// saveSchedule saves a schedule and returns its id.
func (d *DriverEnv) saveSchedule(s *driver.Schedule) int64 {
	d.T.Helper()
	d.Tx(func(tx driver.Tx) error { return tx.ScheduleSave(d.Ctx, s) })
	require.NotZero(d.T, s.ID, "id of the saved schedule")
	return s.ID
}

// schedule reads a schedule row.
func (d *DriverEnv) schedule(id int64) *driver.Schedule {
	d.T.Helper()
	return inTx(d, func(tx driver.Tx) (*driver.Schedule, error) { return tx.ScheduleGet(d.Ctx, id, driver.LockNone) })
}

// jobIDs returns the ids of job rows, in order.
func jobIDs(jobs []*driver.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// workflowIDs returns the ids of workflow rows, in order.
func workflowIDs(wfs []*driver.Workflow) []int64 {
	out := make([]int64, len(wfs))
	for i, w := range wfs {
		out[i] = w.ID
	}
	return out
}

// scheduleIDs returns the ids of schedule rows, in order.
func scheduleIDs(ss []*driver.Schedule) []int64 {
	out := make([]int64, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// overlap runs two transactions on separate stores (separate
// connections) as concurrent workers do: first runs its body, and then,
// with its transaction still open, second starts on the other store.
//
// With row locks the first transaction waits, holding its locks, until
// the second has committed, so second sees exactly what first's locks
// allow. With serial writers (Harness.SerialWriters) the first commits
// without waiting, since the second cannot begin before it has; the
// second then runs on the committed rows.
//
// Each body must be safe to run again (InTx retries transient conflicts).
// A guard of 30 s fails the case instead of hanging when the second
// transaction blocks on the first's locks.
func (d *DriverEnv) overlap(first, second func(tx driver.Tx) error) {
	d.T.Helper()
	other := d.Open()
	ctx, cancel := context.WithTimeout(d.Ctx, 30*time.Second)
	defer cancel()
	var firstDone, secondSawFirstDone atomic.Bool
	secondFinished := make(chan struct{})
	var secondErr error
	var startOnce sync.Once
	startSecond := func() {
		go func() {
			defer close(secondFinished)
			secondErr = other.InTx(ctx, func(tx driver.Tx) error {
				secondSawFirstDone.Store(firstDone.Load())
				return second(tx)
			})
		}()
	}
	err := d.S.InTx(ctx, func(tx driver.Tx) error {
		firstDone.Store(false)
		if err := first(tx); err != nil {
			return err
		}
		startOnce.Do(startSecond)
		if !d.H.SerialWriters {
			select {
			case <-secondFinished:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		firstDone.Store(true)
		return nil
	})
	require.NoError(d.T, err, "first transaction")
	select {
	case <-secondFinished:
	case <-ctx.Done():
		require.FailNow(d.T, "the second transaction did not finish")
	}
	require.NoError(d.T, secondErr, "second transaction")
	if d.H.SerialWriters {
		assert.True(d.T, secondSawFirstDone.Load(), "with serial writers the second transaction began before the first had committed")
	} else {
		assert.False(d.T, secondSawFirstDone.Load(), "the second transaction waited for the first to end instead of running beside it")
	}
}
