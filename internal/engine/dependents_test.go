package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// dependentsTx is a driver.DependentsTx over a fixed jobs table that
// counts its reads (its other driver.Tx methods are not called).
type dependentsTx struct {
	driver.Tx
	jobs     []*driver.Job
	maxReads int
	lookups  [][]int64
}

func (d *dependentsTx) JobDependsOnMax(context.Context) (int64, error) {
	d.maxReads++
	var most int64
	for _, j := range d.jobs {
		most = max(most, j.DependsOn)
	}
	return most, nil
}

func (d *dependentsTx) JobPendingDependents(_ context.Context, ids []int64) ([]*driver.Job, error) {
	d.lookups = append(d.lookups, ids)
	var out []*driver.Job
	for _, j := range d.jobs {
		for _, id := range ids {
			if j.DependsOn == id && j.Status == driver.JobPending {
				out = append(out, j)
			}
		}
	}
	return out, nil
}

func idJobs(ids ...int64) []*driver.Job {
	out := make([]*driver.Job, len(ids))
	for i, id := range ids {
		out[i] = &driver.Job{ID: id}
	}
	return out
}

// TestCompletionReadsDependentsOnlyWhenTheyMayExist: a completion of jobs
// newer than every dependency reads the highest depends_on about once a
// second and looks up no dependents; a completion of a job at or below it
// looks up the dependents of those jobs only, and notes the pending ones
// as claimable. The horizon is read again early once another process
// committed jobs, and raised without a read by a dependent job inserted or
// claimed in this process.
func TestCompletionReadsDependentsOnlyWhenTheyMayExist(t *testing.T) {
	e := &Engine{deps: gateFor("")}
	tx := &dependentsTx{jobs: []*driver.Job{
		{ID: 10, Queue: "q", Handler: "then", DependsOn: 5, Status: driver.JobPending},
		{ID: 11, Queue: "q", Handler: "done", DependsOn: 5, Status: driver.JobCompleted},
	}}
	complete := func(ids ...int64) map[jobnote.Key]int {
		t.Helper()
		ctx, n := jobnote.With(context.Background())
		require.NoError(t, e.noteDependents(ctx, tx, idJobs(ids...)))
		counts, _ := n.Take()
		return counts
	}

	assert.Empty(t, complete(20, 21), "claimable after completing jobs without dependents")
	assert.Equal(t, 1, tx.maxReads, "the first completion reads the horizon")
	assert.Empty(t, tx.lookups, "dependents looked up for jobs above the horizon")
	for range 10 {
		complete(22, 23)
	}
	assert.Equal(t, 1, tx.maxReads, "horizon reads within a second")
	assert.Empty(t, tx.lookups, "dependents looked up for jobs above the horizon")

	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "then"}: 1}, complete(30, 5, 31), "claimable after completing the dependency")
	assert.Equal(t, [][]int64{{5}}, tx.lookups, "dependents looked up: only of the jobs at or below the horizon")

	// Another process's dependent, above the horizon read: found once
	// the news of its commit and depReadGap passed.
	tx.jobs = append(tx.jobs, &driver.Job{ID: 41, Queue: "q", Handler: "next", DependsOn: 40, Status: driver.JobPending})
	assert.Empty(t, complete(40), "claimable before the news")
	e.deps.heard.Store(true)
	e.deps.readAt.Store(depClock() - int64(depReadGap))
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "next"}: 1}, complete(40), "claimable after the news")
	assert.Equal(t, 2, tx.maxReads, "horizon reads")
	assert.False(t, e.deps.heard.Load(), "the news is taken by the read")

	// A dependent inserted (jobnote.OnDependsOn) or claimed in this
	// process raises the horizon without a read.
	tx.jobs = append(tx.jobs, &driver.Job{ID: 61, Queue: "q", Handler: "inserted", DependsOn: 60, Status: driver.JobPending},
		&driver.Job{ID: 71, Queue: "q", Handler: "claimed", DependsOn: 70, Status: driver.JobPending})
	ctx, n := jobnote.With(context.Background())
	n.OnDependsOn(e.deps.raise)
	jobnote.Inserted(ctx, []*driver.Job{{ID: 61, DependsOn: 60}})
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "inserted"}: 1}, complete(60), "claimable after an insert here")
	e.claimedDependents([]*Claimed{{Job: &driver.Job{ID: 70, DependsOn: 41}}})
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "claimed"}: 1}, complete(70), "claimable after a claim here")
	assert.Equal(t, 2, tx.maxReads, "horizon reads")

	// Step jobs, completed by their workflow's advance, by id: the same
	// gate.
	lookups := len(tx.lookups)
	completeSteps := func(ids ...int64) map[jobnote.Key]int {
		t.Helper()
		ctx, n := jobnote.With(context.Background())
		require.NoError(t, e.noteDependentIDs(ctx, tx, ids))
		counts, _ := n.Take()
		return counts
	}
	assert.Empty(t, completeSteps(90, 91), "claimable after completing step jobs without dependents")
	assert.Len(t, tx.lookups, lookups, "dependents looked up for step jobs above the horizon")
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "then"}: 1}, completeSteps(92, 5), "claimable after completing the step job depended on")
	assert.Equal(t, []int64{5}, tx.lookups[len(tx.lookups)-1], "dependents looked up: only of the step jobs at or below the horizon")
	assert.Equal(t, 2, tx.maxReads, "horizon reads")
}
