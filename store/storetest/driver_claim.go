package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of JobClaim and JobHasDue: which jobs a claim may take
// (driver.ClaimParams) and in which order.
func init() {
	registerDriver("Claim/Order", testDriverClaimOrder)
	registerDriver("Claim/MarksRowsProcessing", testDriverClaimMarks)
	registerDriver("Claim/OnlyDueJobs", testDriverClaimDue)
	registerDriver("Claim/OnlyPendingJobsOfTheQueue", testDriverClaimQueueStatus)
	registerDriver("Claim/OnlyListedHandlers", testDriverClaimHandlers)
	registerDriver("Claim/SkipsPausedQueues", testDriverClaimPaused)
	registerDriver("Claim/WaitsForDependency", testDriverClaimDependsOn)
	registerDriver("Claim/PendingDependents", testDriverPendingDependents)
	registerDriver("Claim/FollowsWorkflowStatus", testDriverClaimWorkflowStatus)
	registerDriver("Claim/HasDueReadsWithoutClaiming", testDriverHasDue)
	registerDriver("Claim/AttemptsStopAtColumnLimit", testDriverClaimAttemptsLimit)
	registerDriver("Claim/RestrictedToIDs", testDriverClaimIDs)
	registerDriver("Claim/CandidatesAreIDsInClaimOrder", testDriverClaimCandidates)
	registerDriver("Claim/BuryUnclaimable", testDriverBuryUnclaimable)
}

// testDriverClaimAttemptsLimit: a row whose attempts already hold the
// column's largest value is claimed with attempts left there (and its
// token naming that attempt), in the same batch as other rows, instead of
// failing the claim with an out-of-range error.
func testDriverClaimAttemptsLimit(t *testing.T, d *DriverEnv) {
	full, near := newJob("default", "h"), newJob("default", "h")
	full.Attempts, near.Attempts = 255, 254
	ids := d.insertJobs(full, near, newJob("default", "h"))
	claimed := d.claim(claimParams("default", Epoch, 10, "h"))
	require.Equal(t, ids, jobIDs(claimed), "claimed")
	for i, want := range []int{255, 255, 1} {
		j := d.job(ids[i])
		assert.Equalf(t, want, claimed[i].Attempts, "row %d: attempts returned", i)
		assert.Equalf(t, want, j.Attempts, "row %d: attempts stored", i)
		assert.Equalf(t, int64(7<<8+want), j.ClaimToken, "row %d: claim token", i)
		assert.Equalf(t, driver.JobProcessing, j.Status, "row %d: status", i)
	}
}

// testDriverClaimIDs: ClaimParams.IDs restricts a claim to those jobs,
// every other condition still applying, at most Limit of them.
func testDriverClaimIDs(t *testing.T, d *DriverEnv) {
	other := newJob("default", "x")
	ids := d.insertJobs(newJob("default", "h"), newJob("default", "h"), newJob("default", "h"), other, newJob("default", "h"))
	p := claimParams("default", Epoch, 10, "h")
	p.IDs = []int64{ids[1], ids[3], ids[4]}
	assert.Equal(t, []int64{ids[1], ids[4]}, jobIDs(d.claim(p)), "claimed: the listed jobs of the listed handlers")
	p.IDs, p.Limit = []int64{ids[0], ids[1], ids[2]}, 1
	assert.Equal(t, []int64{ids[0]}, jobIDs(d.claim(p)), "claimed with a limit of 1")
	assert.Equal(t, driver.JobPending, d.job(ids[2]).Status, "the listed job past the limit")
}

// testDriverClaimCandidates: JobClaimCandidates lists what a claim would
// take, in its order, and changes nothing.
func testDriverClaimCandidates(t *testing.T, d *DriverEnv) {
	urgent := newJob("default", "h")
	urgent.Priority = driver.PriorityUrgent
	later := newJob("default", "h")
	later.AvailableAt = Epoch.Add(time.Minute)
	ids := d.insertJobs(newJob("default", "h"), urgent, later, newJob("other", "h"), newJob("default", "h"))
	p := claimParams("default", Epoch, 10, "h")
	got := inTx(d, func(tx driver.Tx) ([]int64, error) { return tx.JobClaimCandidates(d.Ctx, p) })
	assert.Equal(t, []int64{ids[1], ids[0], ids[4]}, got, "candidates")
	p.Limit = 2
	got = inTx(d, func(tx driver.Tx) ([]int64, error) { return tx.JobClaimCandidates(d.Ctx, p) })
	assert.Equal(t, []int64{ids[1], ids[0]}, got, "candidates with a limit of 2")
	assert.Equal(t, driver.JobPending, d.job(ids[1]).Status, "status after listing candidates")
	assert.Equal(t, 0, d.job(ids[1]).Attempts, "attempts after listing candidates")
}

// testDriverBuryUnclaimable: JobBuryUnclaimable buries a pending job with
// its message and leaves other statuses alone.
func testDriverBuryUnclaimable(t *testing.T, d *DriverEnv) {
	done := newJob("default", "h")
	done.Status = driver.JobCompleted
	j := newJob("default", "h")
	j.Attempts = 255
	ids := d.insertJobs(j, done)
	at := Epoch.Add(time.Minute)
	ok := inTx(d, func(tx driver.Tx) (bool, error) { return tx.JobBuryUnclaimable(d.Ctx, ids[0], "cannot be claimed", at) })
	assert.True(t, ok, "the pending job was buried")
	got := d.job(ids[0])
	assert.Equal(t, driver.JobBuried, got.Status, "status")
	assert.Equal(t, "cannot be claimed", got.ErrorMessage, "error")
	assert.Equal(t, at, got.FailedAt, "failed_at")
	assert.Equal(t, 255, got.Attempts, "attempts unchanged")
	ok = inTx(d, func(tx driver.Tx) (bool, error) { return tx.JobBuryUnclaimable(d.Ctx, ids[1], "no", at) })
	assert.False(t, ok, "a completed job buried")
	assert.Equal(t, driver.JobCompleted, d.job(ids[1]).Status, "the completed job's status")
}

func testDriverClaimOrder(t *testing.T, d *DriverEnv) {
	job := func(p driver.Priority, due time.Duration) *driver.Job {
		j := newJob("default", "h")
		j.Priority, j.AvailableAt = p, Epoch.Add(due)
		return j
	}
	// Inserted in an order that is neither the claim order nor its reverse.
	ids := d.insertJobs(
		job(driver.PriorityLow, -10*time.Second),    // 0
		job(driver.PriorityUrgent, -5*time.Second),  // 1
		job(driver.PriorityUrgent, -20*time.Second), // 2
		job(driver.PriorityNormal, 0),               // 3
		job(driver.PriorityLow, -10*time.Second),    // 4: due with 0, later id
		job(driver.PriorityHigh, -time.Second),      // 5
		job(driver.PriorityLow, -30*time.Second),    // 6
	)
	first := d.claim(claimParams("default", Epoch, 3, "h"))
	assert.Equal(t, []int64{ids[2], ids[1], ids[5]}, jobIDs(first), "first claim: urgent by due time, then high")
	rest := d.claim(claimParams("default", Epoch, 10, "h"))
	assert.Equal(t, []int64{ids[3], ids[6], ids[0], ids[4]}, jobIDs(rest), "second claim: normal, then low by due time and id")
	assert.Empty(t, d.claim(claimParams("default", Epoch, 10, "h")), "third claim")
}

func testDriverClaimMarks(t *testing.T, d *DriverEnv) {
	a := newJob("default", "h")
	a.Attempts = 2 // a retried job: the claim starts attempt 3
	ids := d.insertJobs(a, newJob("default", "h"))
	now := Epoch.Add(90*time.Second + 400*time.Millisecond)
	p := claimParams("default", now, 10, "h")
	p.Token = 4242 << 8
	claimed := d.claim(p)
	require.Len(t, claimed, 2, "claimed")
	stored := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobGetMany(d.Ctx, ids, driver.LockNone) })
	require.Len(t, stored, 2, "stored rows")
	for i, want := range []int{3, 1} {
		for what, j := range map[string]*driver.Job{"returned": claimed[i], "stored": stored[i]} {
			assert.Equalf(t, ids[i], j.ID, "%s row %d: id", what, i)
			assert.Equalf(t, driver.JobProcessing, j.Status, "%s row %d: status", what, i)
			assert.Equalf(t, want, j.Attempts, "%s row %d: attempts", what, i)
			assert.Equalf(t, int64(4242<<8+want), j.ClaimToken, "%s row %d: claim_token is the base token plus the attempt", what, i)
			assert.Equalf(t, Epoch.Add(90*time.Second), j.ReservedAt, "%s row %d: reserved_at (now, second precision)", what, i)
			assert.Equalf(t, "h", j.Handler, "%s row %d: handler", what, i)
			assert.Equalf(t, `{}`, string(j.Payload), "%s row %d: payload", what, i)
		}
	}
}

func testDriverClaimDue(t *testing.T, d *DriverEnv) {
	due := newJob("default", "h")
	later := newJob("default", "h")
	later.AvailableAt = Epoch.Add(time.Second)
	ids := d.insertJobs(due, later)
	// now is truncated to the second, as available_at is.
	assert.Equal(t, []int64{ids[0]}, jobIDs(d.claim(claimParams("default", Epoch.Add(999*time.Millisecond), 10, "h"))),
		"claimed before the second job is due")
	assert.Equal(t, []int64{ids[1]}, jobIDs(d.claim(claimParams("default", Epoch.Add(time.Second), 10, "h"))),
		"claimed when due")
}

func testDriverClaimQueueStatus(t *testing.T, d *DriverEnv) {
	with := func(q string, status driver.JobStatus) *driver.Job {
		j := newJob(q, "h")
		j.Status = status
		return j
	}
	ids := d.insertJobs(with("other", driver.JobPending), with("q", driver.JobProcessing), with("q", driver.JobCompleted),
		with("q", driver.JobFailed), with("q", driver.JobBuried), with("q", driver.JobPending))
	assert.Equal(t, []int64{ids[5]}, jobIDs(d.claim(claimParams("q", Epoch, 10, "h"))), "claimed from q")
	assert.Equal(t, driver.JobProcessing, d.job(ids[1]).Status, "the processing job")
	assert.Equal(t, 0, d.job(ids[1]).Attempts, "attempts of the processing job (not claimed again)")
	assert.Equal(t, driver.JobPending, d.job(ids[0]).Status, "the job of the other queue")
}

func testDriverClaimHandlers(t *testing.T, d *DriverEnv) {
	ids := d.insertJobs(newJob("default", "a"), newJob("default", "b"), newJob("default", "c"))
	assert.Empty(t, d.claim(claimParams("default", Epoch, 10)), "claimed with no handlers")
	assert.Empty(t, d.claim(claimParams("default", Epoch, 0, "a", "b", "c")), "claimed with a limit of 0")
	assert.False(t, d.hasDue(claimParams("default", Epoch, 10)), "due with no handlers")
	assert.Equal(t, []int64{ids[0], ids[2]}, jobIDs(d.claim(claimParams("default", Epoch, 10, "a", "c", "z"))), "claimed for a, c and z")
	b := d.job(ids[1])
	assert.Equal(t, driver.JobPending, b.Status, "status of the job no handler was given for")
	assert.Equal(t, 0, b.Attempts, "attempts of the job no handler was given for")
}

func testDriverClaimPaused(t *testing.T, d *DriverEnv) {
	ids := d.insertJobs(newJob("q", "h"), newJob("other", "h"))
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "q", true, Epoch) })
	assert.False(t, d.hasDue(claimParams("q", Epoch, 10, "h")), "due in the paused queue")
	assert.Empty(t, d.claim(claimParams("q", Epoch, 10, "h")), "claimed from the paused queue")
	assert.Equal(t, []int64{ids[1]}, jobIDs(d.claim(claimParams("other", Epoch, 10, "h"))), "claimed from another queue")
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "q", false, Epoch) })
	assert.Equal(t, []int64{ids[0]}, jobIDs(d.claim(claimParams("q", Epoch, 10, "h"))), "claimed after resuming")
}

func testDriverClaimDependsOn(t *testing.T, d *DriverEnv) {
	dep := d.insertJob(newJob("default", "first"))
	after := func(dependsOn int64) *driver.Job {
		j := newJob("default", "then")
		j.DependsOn = dependsOn
		return j
	}
	buried := newJob("default", "other")
	buried.Status = driver.JobBuried
	buriedID := d.insertJob(buried)
	ids := d.insertJobs(after(dep), after(buriedID), after(dep+1000))
	then := claimParams("default", Epoch, 10, "then")
	assert.Empty(t, d.claim(then), "claimed while the dependency is pending")
	require.Len(t, d.claim(claimParams("default", Epoch, 10, "first")), 1, "claimed the dependency")
	assert.False(t, d.hasDue(then), "due while the dependency is processing")
	assert.Empty(t, d.claim(then), "claimed while the dependency is processing")
	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(d.Ctx, []int64{dep}, Epoch) })
	assert.True(t, d.hasDue(then), "due once the dependency completed")
	assert.Equal(t, []int64{ids[0]}, jobIDs(d.claim(then)),
		"claimed once the dependency completed (not those waiting on a buried or missing job)")
}

// testDriverPendingDependents: the reads a completion makes to wake the
// workers of the jobs that wait on it (driver.DependentsTx, optional): the
// highest depends_on, and the pending jobs among a few jobs' dependents.
func testDriverPendingDependents(t *testing.T, d *DriverEnv) {
	// Optional: a store without it is asked outside the transaction, so
	// that the skip never leaves one open.
	if !inTx(d, func(tx driver.Tx) (bool, error) { _, ok := tx.(driver.DependentsTx); return ok, nil }) {
		t.Skip("the store's transactions have no JobPendingDependents (driver.DependentsTx)")
	}
	most := func() int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.(driver.DependentsTx).JobDependsOnMax(d.Ctx) })
	}
	pending := func(ids ...int64) []*driver.Job {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
			return tx.(driver.DependentsTx).JobPendingDependents(d.Ctx, ids)
		})
	}
	first := d.insertJob(newJob("default", "first"))
	assert.Zero(t, most(), "highest depends_on without a dependent job")
	after := func(q, h string, dependsOn int64, status driver.JobStatus) *driver.Job {
		j := newJob(q, h)
		j.DependsOn, j.Status = dependsOn, status
		return j
	}
	other := d.insertJob(newJob("default", "other"))
	ids := d.insertJobs(after("mail", "then", first, driver.JobPending), after("default", "also", first, driver.JobPending),
		after("default", "done", first, driver.JobCompleted), after("default", "next", other, driver.JobBuried))
	assert.Equal(t, other, most(), "highest depends_on")
	got := pending(first, other, ids[0])
	require.Len(t, got, 2, "pending dependents of the first job (not the completed or buried ones, nor those of a job without)")
	byID := map[int64]*driver.Job{}
	for _, j := range got {
		byID[j.ID] = j
	}
	require.Contains(t, byID, ids[0], "pending dependent in queue mail")
	require.Contains(t, byID, ids[1], "pending dependent in queue default")
	assert.Equal(t, "mail", byID[ids[0]].Queue, "queue")
	assert.Equal(t, "then", byID[ids[0]].Handler, "handler")
	assert.Equal(t, first, byID[ids[0]].DependsOn, "depends_on")
	assert.Equal(t, driver.JobPending, byID[ids[0]].Status, "status")
	assert.Empty(t, pending(ids[0]), "dependents of a job without any")
	assert.Empty(t, pending(), "no jobs")
}

func testDriverClaimWorkflowStatus(t *testing.T, d *DriverEnv) {
	claimable := map[driver.WorkflowStatus]bool{
		driver.WorkflowRunning: true, driver.WorkflowPaused: true,
		driver.WorkflowWaitingForSignal: false, driver.WorkflowWaitingForWorkflows: false,
		driver.WorkflowCompleted: false, driver.WorkflowFailed: false, driver.WorkflowCancelled: false,
	}
	jobOf := map[int64]driver.WorkflowStatus{}
	var want []int64
	for status, ok := range claimable {
		wf := d.insertWorkflow(newWorkflow("wf", status))
		step := 0
		j := newJob("default", "step")
		j.WorkflowID, j.StepIndex = wf, &step
		id := d.insertJob(j)
		jobOf[id] = status
		if ok {
			want = append(want, id)
		}
	}
	// A step whose workflow row does not exist is claimed too, so the
	// engine can bury it with an error instead of leaving it pending.
	orphan := newJob("default", "step")
	orphan.WorkflowID = 999999
	orphanID := d.insertJob(orphan)
	want = append(want, orphanID)
	got := jobIDs(d.claim(claimParams("default", Epoch, 20, "step")))
	assert.ElementsMatch(t, want, got, "claimed the steps of running and paused workflows, and the orphan, only")
	for _, id := range got {
		if id != orphanID {
			assert.Truef(t, claimable[jobOf[id]], "claimed the step of a %s workflow", jobOf[id])
		}
	}
}

func testDriverHasDue(t *testing.T, d *DriverEnv) {
	p := claimParams("default", Epoch, 1, "h")
	assert.False(t, d.hasDue(p), "due in an empty table")
	later := newJob("default", "h")
	later.AvailableAt = Epoch.Add(time.Minute)
	id := d.insertJob(later)
	assert.False(t, d.hasDue(p), "due before the job's time")
	other := p
	other.Queue = "other"
	p.Now = Epoch.Add(time.Minute)
	other.Now = p.Now
	assert.True(t, d.hasDue(p), "due at the job's time")
	assert.False(t, d.hasDue(other), "due in another queue")
	j := d.job(id)
	assert.Equal(t, driver.JobPending, j.Status, "status after JobHasDue")
	assert.Equal(t, 0, j.Attempts, "attempts after JobHasDue")
	assert.Zero(t, j.ClaimToken, "claim_token after JobHasDue")
}
