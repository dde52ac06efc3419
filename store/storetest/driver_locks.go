package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of lock modes and concurrent transactions. Stores with
// row locks (MySQL) run the second transaction of each case while the
// first still holds its locks; stores with serial writers (SQLite, see
// Harness.SerialWriters) run it after the first has committed, since it
// cannot begin before. The outcome the engine relies on, disjoint work
// for concurrent workers, is the same for both.
func init() {
	registerDriver("Locks/EveryModeReadsAnUnlockedRow", testDriverLockModesRead)
	registerDriver("Locks/SkipLockedPassesOverHeldRows", testDriverSkipLockedRead)
	registerDriver("Locks/ConcurrentClaimsTakeDisjointJobs", testDriverConcurrentClaims)
	registerDriver("Locks/ConcurrentStaleSweepsTakeDisjointJobs", testDriverConcurrentStale)
	registerDriver("Locks/ConcurrentDeadlineSweepsTakeDisjointWorkflows", testDriverConcurrentExpired)
	registerDriver("Locks/ConcurrentTicksTakeDisjointSchedules", testDriverConcurrentDue)
}

var lockModes = map[string]driver.LockMode{"LockNone": driver.LockNone, "LockUpdate": driver.LockUpdate, "LockSkipLocked": driver.LockSkipLocked}

func testDriverLockModesRead(t *testing.T, d *DriverEnv) {
	jobs := d.insertJobs(newJob("default", "h"), newJob("default", "h"))
	wf := d.insertWorkflow(newWorkflow("wf", driver.WorkflowRunning))
	sched := d.saveSchedule(newSchedule("tick", Epoch))
	for name, mode := range lockModes {
		d.Tx(func(tx driver.Tx) error {
			j, err := tx.JobGet(d.Ctx, jobs[0], mode)
			if err != nil {
				return err
			}
			assert.Equal(t, jobs[0], j.ID, "JobGet with "+name)
			many, err := tx.JobGetMany(d.Ctx, jobs, mode)
			if err != nil {
				return err
			}
			assert.Equal(t, jobs, jobIDs(many), "JobGetMany with "+name)
			byWF, err := tx.JobListByWorkflow(d.Ctx, wf, nil, mode)
			if err != nil {
				return err
			}
			assert.Empty(t, byWF, "JobListByWorkflow with "+name)
			w, err := tx.WorkflowGet(d.Ctx, wf, mode)
			if err != nil {
				return err
			}
			assert.Equal(t, wf, w.ID, "WorkflowGet with "+name)
			ws, err := tx.WorkflowGetMany(d.Ctx, []int64{wf}, mode)
			if err != nil {
				return err
			}
			assert.Equal(t, []int64{wf}, workflowIDs(ws), "WorkflowGetMany with "+name)
			s, err := tx.ScheduleGet(d.Ctx, sched, mode)
			if err != nil {
				return err
			}
			assert.Equal(t, sched, s.ID, "ScheduleGet with "+name)
			s, err = tx.ScheduleByHandler(d.Ctx, "tick", mode)
			if err != nil {
				return err
			}
			assert.Equal(t, sched, s.ID, "ScheduleByHandler with "+name)
			return nil
		})
	}
}

func testDriverSkipLockedRead(t *testing.T, d *DriverEnv) {
	ids := d.insertJobs(newJob("default", "h"), newJob("default", "h"))
	wfs := []int64{d.insertWorkflow(newWorkflow("wf", driver.WorkflowRunning)), d.insertWorkflow(newWorkflow("wf", driver.WorkflowRunning))}
	var skippedJob, skippedWF error
	var jobsSeen, wfsSeen []int64
	var plain *driver.Job
	d.overlap(func(tx driver.Tx) error {
		if _, err := tx.JobGet(d.Ctx, ids[0], driver.LockUpdate); err != nil {
			return err
		}
		_, err := tx.WorkflowGet(d.Ctx, wfs[0], driver.LockUpdate)
		return err
	}, func(tx driver.Tx) (err error) {
		_, skippedJob = tx.JobGet(d.Ctx, ids[0], driver.LockSkipLocked)
		if skippedJob != nil && !errors.Is(skippedJob, driver.ErrNotFound) {
			return skippedJob
		}
		_, skippedWF = tx.WorkflowGet(d.Ctx, wfs[0], driver.LockSkipLocked)
		if skippedWF != nil && !errors.Is(skippedWF, driver.ErrNotFound) {
			return skippedWF
		}
		jobs, err := tx.JobGetMany(d.Ctx, ids, driver.LockSkipLocked)
		if err != nil {
			return err
		}
		jobsSeen = jobIDs(jobs)
		w, err := tx.WorkflowGetMany(d.Ctx, wfs, driver.LockSkipLocked)
		if err != nil {
			return err
		}
		wfsSeen = workflowIDs(w)
		plain, err = tx.JobGet(d.Ctx, ids[0], driver.LockNone)
		return err
	})
	require.NotNil(t, plain, "plain read of the held job")
	assert.Equal(t, ids[0], plain.ID, "a plain read does not wait for or skip a held row")
	if d.H.SerialWriters {
		// The first transaction has committed: nothing is held.
		assert.NoError(t, skippedJob, "JobGet with LockSkipLocked after the holder committed")
		assert.NoError(t, skippedWF, "WorkflowGet with LockSkipLocked after the holder committed")
		assert.Equal(t, ids, jobsSeen, "JobGetMany with LockSkipLocked after the holder committed")
		assert.Equal(t, wfs, wfsSeen, "WorkflowGetMany with LockSkipLocked after the holder committed")
		return
	}
	assert.ErrorIs(t, skippedJob, driver.ErrNotFound, "JobGet with LockSkipLocked of a job another transaction holds")
	assert.ErrorIs(t, skippedWF, driver.ErrNotFound, "WorkflowGet with LockSkipLocked of a workflow another transaction holds")
	assert.Equal(t, ids[1:], jobsSeen, "JobGetMany with LockSkipLocked passes over the held job")
	assert.Equal(t, wfs[1:], wfsSeen, "WorkflowGetMany with LockSkipLocked passes over the held workflow")
}

func testDriverConcurrentClaims(t *testing.T, d *DriverEnv) {
	jobs := make([]*driver.Job, 10)
	for i := range jobs {
		jobs[i] = newJob("default", "h")
	}
	ids := d.insertJobs(jobs...)
	var first, second []*driver.Job
	d.overlap(func(tx driver.Tx) (err error) {
		p := claimParams("default", Epoch, 4, "h")
		p.Token = 1 << 8
		first, err = tx.JobClaim(d.Ctx, p)
		return err
	}, func(tx driver.Tx) (err error) {
		p := claimParams("default", Epoch, 100, "h")
		p.Token = 2 << 8
		second, err = tx.JobClaim(d.Ctx, p)
		return err
	})
	assert.Equal(t, ids[:4], jobIDs(first), "first claim")
	assert.Equal(t, ids[4:], jobIDs(second), "second claim: the jobs the first did not take")
	for i, id := range ids {
		token := int64(1<<8 + 1)
		if i >= 4 {
			token = 2<<8 + 1
		}
		j := d.job(id)
		assert.Equalf(t, token, j.ClaimToken, "claim token of job %d", i)
		assert.Equalf(t, 1, j.Attempts, "attempts of job %d", i)
	}
}

func testDriverConcurrentStale(t *testing.T, d *DriverEnv) {
	var ids []int64
	for i := range 6 {
		id := d.insertJob(newJob("default", "h"))
		d.updateJob(id, func(j *driver.Job) {
			j.Status, j.ReservedAt, j.Attempts, j.ClaimToken = driver.JobProcessing, Epoch.Add(time.Duration(i)*time.Second), 1, 7<<8+1
		})
		ids = append(ids, id)
	}
	before := Epoch.Add(time.Hour)
	// Each sweeper releases what it found, as stale-claim recovery does.
	sweep := func(limit int, found *[]int64) func(tx driver.Tx) error {
		return func(tx driver.Tx) error {
			jobs, err := tx.JobFindStale(d.Ctx, driver.StaleParams{ReservedBefore: before, Limit: limit, Lock: driver.LockSkipLocked})
			if err != nil {
				return err
			}
			*found = jobIDs(jobs)
			for _, j := range jobs {
				j.Status, j.ReservedAt = driver.JobPending, time.Time{}
				if err := tx.JobUpdate(d.Ctx, j); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var first, second []int64
	d.overlap(sweep(2, &first), sweep(100, &second))
	assert.Equal(t, ids[:2], first, "first sweep: the oldest claims")
	assert.Equal(t, ids[2:], second, "second sweep: the claims the first did not take")
}

func testDriverConcurrentExpired(t *testing.T, d *DriverEnv) {
	var ids []int64
	for range 6 {
		wf := newWorkflow("wf", driver.WorkflowRunning)
		wf.DeadlineAt = Epoch
		ids = append(ids, d.insertWorkflow(wf))
	}
	// Each sweeper fails what it found, as the deadline sweep does.
	sweep := func(limit int, found *[]int64) func(tx driver.Tx) error {
		return func(tx driver.Tx) error {
			wfs, err := tx.WorkflowFindExpired(d.Ctx, driver.ExpiredParams{Now: Epoch.Add(time.Minute), Limit: limit, Lock: driver.LockSkipLocked})
			if err != nil {
				return err
			}
			*found = workflowIDs(wfs)
			for _, w := range wfs {
				w.Status, w.FailedAt = driver.WorkflowFailed, Epoch.Add(time.Minute)
				if err := tx.WorkflowUpdate(d.Ctx, w); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var first, second []int64
	d.overlap(sweep(2, &first), sweep(100, &second))
	assert.Len(t, first, 2, "workflows the first sweep took")
	assert.Len(t, second, 4, "workflows the second sweep took")
	assert.ElementsMatch(t, ids, append(append([]int64(nil), first...), second...), "workflows swept: each once")
}

func testDriverConcurrentDue(t *testing.T, d *DriverEnv) {
	var ids []int64
	for _, h := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, d.saveSchedule(newSchedule(h, Epoch)))
	}
	// Each ticker moves what it found to its next run, as a tick does.
	tick := func(limit int, found *[]int64) func(tx driver.Tx) error {
		return func(tx driver.Tx) error {
			due, err := tx.ScheduleFindDue(d.Ctx, driver.ExpiredParams{Now: Epoch, Limit: limit, Lock: driver.LockSkipLocked})
			if err != nil {
				return err
			}
			*found = scheduleIDs(due)
			for _, s := range due {
				old := s.NextRun
				s.LastRun, s.NextRun = Epoch, Epoch.Add(time.Minute)
				ok, err := tx.ScheduleUpdate(d.Ctx, s, old)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("a schedule this transaction found due was moved by another")
				}
			}
			return nil
		}
	}
	var first, second []int64
	d.overlap(tick(2, &first), tick(100, &second))
	assert.Len(t, first, 2, "schedules the first tick took")
	assert.Len(t, second, 3, "schedules the second tick took")
	assert.ElementsMatch(t, ids, append(append([]int64(nil), first...), second...), "schedules fired: each once")
}
