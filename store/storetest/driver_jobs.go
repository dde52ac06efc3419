package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the job row operations other than claims.
func init() {
	registerDriver("Jobs/InsertWritesEveryColumn", testDriverJobInsertColumns)
	registerDriver("Jobs/InsertManySetsIDsInOrder", testDriverJobInsertMany)
	registerDriver("Jobs/GetMissingIsNotFound", testDriverJobGetMissing)
	registerDriver("Jobs/GetManyInIDOrder", testDriverJobGetMany)
	registerDriver("Jobs/UpdateWritesMutableColumns", testDriverJobUpdate)
	registerDriver("Jobs/CompleteMarksProcessingJobs", testDriverJobComplete)
	registerDriver("Jobs/CompleteClaimedFencesTokenAndAttempt", testDriverJobCompleteClaimed)
	registerDriver("Jobs/FindStaleHonoursLeases", testDriverJobFindStaleLease)
	registerDriver("Jobs/TouchRenewsOwnClaims", testDriverJobTouch)
	registerDriver("Jobs/FindStale", testDriverJobFindStale)
	registerDriver("Jobs/FindTimedOut", testDriverJobFindTimedOut)
	registerDriver("Jobs/ListByWorkflow", testDriverJobListByWorkflow)
	registerDriver("Jobs/FindActiveByHash", testDriverJobFindActiveByHash)
	registerDriver("Jobs/FindActiveUnique", testDriverJobFindActiveUnique)
	registerDriver("Jobs/CountActiveByHandler", testDriverJobCountActive)
	registerDriver("Jobs/ListFilters", testDriverJobList)
	registerDriver("Jobs/Counts", testDriverJobCounts)
	registerDriver("Jobs/OldestDueIsTheEarliestDuePendingJob", testDriverJobOldestDue)
	registerDriver("Jobs/DeleteFinishedHonoursLimit", testDriverJobDeleteFinished)
}

func testDriverJobInsertColumns(t *testing.T, d *DriverEnv) {
	step := 2
	in := &driver.Job{Queue: "mail", Handler: "send", Payload: []byte(`{"to":"a@b.c","n":[1,2]}`),
		PayloadHash: strings.Repeat("ab", 32), Priority: driver.PriorityHigh, Status: driver.JobPending, Attempts: 1,
		MaxAttempts: 5, AvailableAt: Epoch.Add(90*time.Second + 700*time.Millisecond), WorkflowID: 41, StepIndex: &step,
		DependsOn: 40, BatchID: 9, ConcurrencyGroup: "tenant-1", ConcurrencyLimit: 2, CostUnits: 3, CreatedAt: Epoch,
		ScheduleToStartAt: Epoch.Add(1500 * time.Microsecond), ScheduleToCloseAt: Epoch.Add(time.Hour + 250*time.Microsecond)}
	id := d.insertJob(in)
	j := d.job(id)
	assert.Equal(t, id, j.ID, "id")
	assert.Equal(t, "mail", j.Queue, "queue")
	assert.Equal(t, "send", j.Handler, "handler")
	assert.Equal(t, `{"to":"a@b.c","n":[1,2]}`, string(j.Payload), "payload, byte for byte")
	assert.Equal(t, strings.Repeat("ab", 32), j.PayloadHash, "payload_hash")
	assert.Equal(t, driver.PriorityHigh, j.Priority, "priority")
	assert.Equal(t, driver.JobPending, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "attempts")
	assert.Equal(t, 5, j.MaxAttempts, "max_attempts")
	assert.Equal(t, Epoch.Add(90*time.Second), j.AvailableAt, "available_at (second precision)")
	assert.Equal(t, int64(41), j.WorkflowID, "workflow_id")
	if assert.NotNil(t, j.StepIndex, "step_index") {
		assert.Equal(t, 2, *j.StepIndex, "step_index")
	}
	assert.Equal(t, int64(40), j.DependsOn, "depends_on")
	assert.Equal(t, int64(9), j.BatchID, "batch_id")
	assert.Equal(t, "tenant-1", j.ConcurrencyGroup, "concurrency_group")
	assert.Equal(t, 2, j.ConcurrencyLimit, "concurrency_limit")
	assert.Equal(t, 3, j.CostUnits, "cost_units")
	assert.Equal(t, Epoch, j.CreatedAt, "created_at")
	assert.Equal(t, Epoch.Add(1500*time.Microsecond), j.ScheduleToStartAt, "schedule_to_start_at (microseconds)")
	assert.Equal(t, Epoch.Add(time.Hour+250*time.Microsecond), j.ScheduleToCloseAt, "schedule_to_close_at (microseconds)")
	// What a claim or an attempt sets later is NULL on a new row.
	assert.Zero(t, j.ReservedAt, "reserved_at")
	assert.Zero(t, j.CompletedAt, "completed_at")
	assert.Zero(t, j.FailedAt, "failed_at")
	assert.Empty(t, j.ErrorMessage, "error_message")
	assert.Nil(t, j.HeartbeatData, "heartbeat_data")
	assert.Zero(t, j.ClaimToken, "claim_token")
	assert.Zero(t, j.StartToCloseAt, "start_to_close_at")
	assert.Zero(t, j.HeartbeatDeadline, "heartbeat_deadline_at")
	assert.Zero(t, j.LastHeartbeatAt, "last_heartbeat_at")

	// Zero values are stored as NULL and read back as zero values; an
	// empty status is stored as pending.
	bare := &driver.Job{Queue: "mail", Handler: "bare", Payload: []byte(`[]`), MaxAttempts: 1, AvailableAt: Epoch, CreatedAt: Epoch}
	id = d.insertJob(bare)
	assert.Equal(t, driver.JobPending, bare.Status, "status set on the inserted row")
	j = d.job(id)
	assert.Equal(t, driver.JobPending, j.Status, "stored status of a job inserted without one")
	assert.Empty(t, j.PayloadHash, "payload_hash")
	assert.Zero(t, j.WorkflowID, "workflow_id")
	assert.Nil(t, j.StepIndex, "step_index")
	assert.Zero(t, j.DependsOn, "depends_on")
	assert.Zero(t, j.BatchID, "batch_id")
	assert.Empty(t, j.ConcurrencyGroup, "concurrency_group")
	assert.Zero(t, j.ConcurrencyLimit, "concurrency_limit")
	assert.Zero(t, j.ScheduleToStartAt, "schedule_to_start_at")
	assert.Zero(t, j.ScheduleToCloseAt, "schedule_to_close_at")

	d.Tx(func(tx driver.Tx) error { return tx.JobInsert(d.Ctx, nil) })
}

func testDriverJobInsertMany(t *testing.T, d *DriverEnv) {
	const n = 250
	jobs := make([]*driver.Job, n)
	for i := range jobs {
		jobs[i] = newJob("default", "bulk")
		jobs[i].Payload = []byte(fmt.Sprintf(`{"i":%d}`, i))
	}
	ids := d.insertJobs(jobs...)
	for i := 1; i < n; i++ {
		require.Greaterf(t, ids[i], ids[i-1], "id of row %d after row %d", i, i-1)
	}
	got := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobGetMany(d.Ctx, ids, driver.LockNone) })
	require.Len(t, got, n, "rows read back")
	for i, j := range got {
		assert.Equalf(t, ids[i], j.ID, "id of row %d", i)
		assert.Equalf(t, fmt.Sprintf(`{"i":%d}`, i), string(j.Payload), "payload of the row with id %d: the id belongs to another row", j.ID)
	}
	// A second statement continues after the first.
	more := d.insertJobs(newJob("default", "bulk"), newJob("default", "bulk"))
	assert.Greater(t, more[0], ids[n-1], "first id of the next insert")
	assert.Greater(t, more[1], more[0], "second id of the next insert")
}

func testDriverJobGetMissing(t *testing.T, d *DriverEnv) {
	id := d.insertJob(newJob("default", "h"))
	err := d.TxErr(func(tx driver.Tx) error {
		_, err := tx.JobGet(d.Ctx, id+1000, driver.LockNone)
		return err
	})
	assert.ErrorIs(t, err, driver.ErrNotFound, "JobGet of a missing id")
	err = d.TxErr(func(tx driver.Tx) error {
		_, err := tx.JobGet(d.Ctx, id+1000, driver.LockUpdate)
		return err
	})
	assert.ErrorIs(t, err, driver.ErrNotFound, "JobGet FOR UPDATE of a missing id")
}

func testDriverJobGetMany(t *testing.T, d *DriverEnv) {
	ids := d.insertJobs(newJob("default", "a"), newJob("default", "b"), newJob("default", "c"))
	got := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
		return tx.JobGetMany(d.Ctx, []int64{ids[2], ids[2] + 1000, ids[0], ids[1]}, driver.LockNone)
	})
	assert.Equal(t, ids, jobIDs(got), "rows in id order, the missing id skipped")
	if assert.Len(t, got, 3) {
		assert.Equal(t, "a", got[0].Handler, "handler of the first row")
		assert.Equal(t, "c", got[2].Handler, "handler of the last row")
	}
	none := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobGetMany(d.Ctx, nil, driver.LockNone) })
	assert.Empty(t, none, "rows for no ids")
}

func testDriverJobUpdate(t *testing.T, d *DriverEnv) {
	id := d.insertJob(newJob("default", "h"))
	step := 4
	d.updateJob(id, func(j *driver.Job) {
		j.Queue, j.Handler, j.CreatedAt = "other", "other", Epoch.Add(time.Hour) // not written
		j.PayloadHash = strings.Repeat("cd", 32)
		j.Priority = driver.PriorityUrgent
		j.Status = driver.JobProcessing
		j.Attempts = 2
		j.MaxAttempts = 7
		j.AvailableAt = Epoch.Add(10 * time.Second)
		j.ReservedAt = Epoch.Add(20*time.Second + 300*time.Millisecond)
		j.CompletedAt = Epoch.Add(30 * time.Second)
		j.FailedAt = Epoch.Add(40 * time.Second)
		j.ErrorMessage = "boom"
		j.WorkflowID = 12
		j.StepIndex = &step
		j.DependsOn = 11
		j.HeartbeatData = []byte(`{"page":3}`)
		j.ClaimToken = 99
		j.ScheduleToStartAt = Epoch.Add(time.Minute + time.Microsecond)
		j.StartToCloseAt = Epoch.Add(2*time.Minute + 2*time.Microsecond)
		j.ScheduleToCloseAt = Epoch.Add(3*time.Minute + 3*time.Microsecond)
		j.HeartbeatDeadline = Epoch.Add(4*time.Minute + 4*time.Microsecond)
		j.LastHeartbeatAt = Epoch.Add(5*time.Minute + 5*time.Microsecond)
	})
	j := d.job(id)
	assert.Equal(t, "default", j.Queue, "queue is not written")
	assert.Equal(t, "h", j.Handler, "handler is not written")
	assert.Equal(t, Epoch, j.CreatedAt, "created_at is not written")
	assert.Equal(t, strings.Repeat("cd", 32), j.PayloadHash, "payload_hash")
	assert.Equal(t, driver.PriorityUrgent, j.Priority, "priority")
	assert.Equal(t, driver.JobProcessing, j.Status, "status")
	assert.Equal(t, 2, j.Attempts, "attempts")
	assert.Equal(t, 7, j.MaxAttempts, "max_attempts")
	assert.Equal(t, Epoch.Add(10*time.Second), j.AvailableAt, "available_at")
	assert.Equal(t, Epoch.Add(20*time.Second), j.ReservedAt, "reserved_at (second precision)")
	assert.Equal(t, Epoch.Add(30*time.Second), j.CompletedAt, "completed_at")
	assert.Equal(t, Epoch.Add(40*time.Second), j.FailedAt, "failed_at")
	assert.Equal(t, "boom", j.ErrorMessage, "error_message")
	assert.Equal(t, int64(12), j.WorkflowID, "workflow_id")
	if assert.NotNil(t, j.StepIndex, "step_index") {
		assert.Equal(t, 4, *j.StepIndex, "step_index")
	}
	assert.Equal(t, int64(11), j.DependsOn, "depends_on")
	assert.JSONEq(t, `{"page":3}`, string(j.HeartbeatData), "heartbeat_data")
	assert.Equal(t, int64(99), j.ClaimToken, "claim_token")
	assert.Equal(t, Epoch.Add(time.Minute+time.Microsecond), j.ScheduleToStartAt, "schedule_to_start_at")
	assert.Equal(t, Epoch.Add(2*time.Minute+2*time.Microsecond), j.StartToCloseAt, "start_to_close_at")
	assert.Equal(t, Epoch.Add(3*time.Minute+3*time.Microsecond), j.ScheduleToCloseAt, "schedule_to_close_at")
	assert.Equal(t, Epoch.Add(4*time.Minute+4*time.Microsecond), j.HeartbeatDeadline, "heartbeat_deadline_at")
	assert.Equal(t, Epoch.Add(5*time.Minute+5*time.Microsecond), j.LastHeartbeatAt, "last_heartbeat_at")

	// Zero values clear the nullable columns.
	d.updateJob(id, func(j *driver.Job) {
		j.PayloadHash, j.ErrorMessage, j.HeartbeatData = "", "", nil
		j.ReservedAt, j.CompletedAt, j.FailedAt = time.Time{}, time.Time{}, time.Time{}
		j.WorkflowID, j.StepIndex, j.DependsOn, j.ClaimToken = 0, nil, 0, 0
		j.ScheduleToStartAt, j.StartToCloseAt, j.ScheduleToCloseAt = time.Time{}, time.Time{}, time.Time{}
		j.HeartbeatDeadline, j.LastHeartbeatAt = time.Time{}, time.Time{}
	})
	j = d.job(id)
	assert.Empty(t, j.PayloadHash, "payload_hash cleared")
	assert.Empty(t, j.ErrorMessage, "error_message cleared")
	assert.Nil(t, j.HeartbeatData, "heartbeat_data cleared")
	assert.Zero(t, j.ReservedAt, "reserved_at cleared")
	assert.Zero(t, j.CompletedAt, "completed_at cleared")
	assert.Zero(t, j.FailedAt, "failed_at cleared")
	assert.Zero(t, j.WorkflowID, "workflow_id cleared")
	assert.Nil(t, j.StepIndex, "step_index cleared")
	assert.Zero(t, j.DependsOn, "depends_on cleared")
	assert.Zero(t, j.ClaimToken, "claim_token cleared")
	assert.Zero(t, j.ScheduleToStartAt, "schedule_to_start_at cleared")
	assert.Zero(t, j.StartToCloseAt, "start_to_close_at cleared")
	assert.Zero(t, j.ScheduleToCloseAt, "schedule_to_close_at cleared")
	assert.Zero(t, j.HeartbeatDeadline, "heartbeat_deadline_at cleared")
	assert.Zero(t, j.LastHeartbeatAt, "last_heartbeat_at cleared")
}

// claimAll inserts n pending jobs of handler h and claims them with token
// at Epoch under the base token token<<8 (so each row's claim_token is
// token<<8 + 1, its first attempt), returning the claimed rows in id
// order.
func (d *DriverEnv) claimAll(n int, h string, token int64) []*driver.Job {
	d.T.Helper()
	jobs := make([]*driver.Job, n)
	for i := range jobs {
		jobs[i] = newJob("default", h)
	}
	ids := d.insertJobs(jobs...)
	p := claimParams("default", Epoch, n, h)
	p.Token = token << 8
	claimed := d.claim(p)
	require.ElementsMatch(d.T, ids, jobIDs(claimed), "claimed jobs")
	return inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobGetMany(d.Ctx, ids, driver.LockNone) })
}

func testDriverJobComplete(t *testing.T, d *DriverEnv) {
	claimed := d.claimAll(2, "h", 7)
	buried := newJob("default", "h")
	buried.Status = driver.JobBuried
	done := newJob("default", "h")
	done.Status = driver.JobCompleted
	others := d.insertJobs(buried, done)
	d.updateJob(others[1], func(j *driver.Job) { j.CompletedAt = Epoch })

	at := Epoch.Add(5 * time.Second)
	d.Tx(func(tx driver.Tx) error {
		return tx.JobComplete(d.Ctx, []int64{claimed[0].ID, claimed[1].ID, others[0], others[1]}, at)
	})
	for _, c := range claimed {
		j := d.job(c.ID)
		assert.Equal(t, driver.JobCompleted, j.Status, "status of a completed processing job")
		assert.Equal(t, at, j.CompletedAt, "completed_at")
	}
	assert.Equal(t, driver.JobBuried, d.job(others[0]).Status, "a buried job is not completed")
	assert.Equal(t, Epoch, d.job(others[1]).CompletedAt, "completed_at of a job completed before")
	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(d.Ctx, nil, at) })
}

func testDriverJobCompleteClaimed(t *testing.T, d *DriverEnv) {
	jobs := d.claimAll(3, "h", 7)
	a, b, c := jobs[0].ID, jobs[1].ID, jobs[2].ID
	at := Epoch.Add(3 * time.Second)
	tok := jobs[0].ClaimToken
	require.Equal(t, int64(7<<8+1), tok, "claim token: base plus attempt")
	complete := func(ids []int64, token int64, attempts int) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobCompleteClaimed(d.Ctx, ids, token, attempts, at) })
	}
	assert.Equal(t, int64(0), complete([]int64{a}, 8<<8+1, 1), "completed under another claim token")
	assert.Equal(t, int64(0), complete([]int64{a}, tok, 2), "completed with another attempt number")
	assert.Equal(t, driver.JobProcessing, d.job(a).Status, "status after the fenced completions")
	assert.Equal(t, int64(1), complete([]int64{a}, tok, 1), "completed under the claim")
	j := d.job(a)
	assert.Equal(t, driver.JobCompleted, j.Status, "status")
	assert.Equal(t, at, j.CompletedAt, "completed_at")
	assert.Equal(t, int64(0), complete([]int64{a}, tok, 1), "completed twice")
	assert.Equal(t, int64(2), complete([]int64{c, a, b}, tok, 1), "rows changed of a batch with one completed job")
	assert.Equal(t, driver.JobCompleted, d.job(b).Status, "status of b")
	assert.Equal(t, driver.JobCompleted, d.job(c).Status, "status of c")
	assert.Equal(t, int64(0), complete(nil, tok, 1), "rows changed for no ids")

	// A pending job carrying the token of an earlier claim is not
	// processing, so it is not completed.
	p := d.claimAll(1, "p", 9)[0]
	d.updateJob(p.ID, func(j *driver.Job) { j.Status = driver.JobPending })
	assert.Equal(t, int64(0), complete([]int64{p.ID}, 9<<8+1, 1), "completed a pending job")
	assert.Equal(t, driver.JobPending, d.job(p.ID).Status, "status of the pending job")
}

func testDriverJobTouch(t *testing.T, d *DriverEnv) {
	jobs := d.claimAll(3, "h", 7)
	a, b, c := jobs[0].ID, jobs[1].ID, jobs[2].ID
	tok := jobs[0].ClaimToken
	touch := func(ids []int64, token int64, at time.Time) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobTouch(d.Ctx, ids, token, at) })
	}
	later := Epoch.Add(time.Minute)
	assert.Equal(t, int64(0), touch([]int64{a, b}, 8<<8+1, later), "renewed under another claim token")
	assert.Equal(t, Epoch, d.job(a).ReservedAt, "reserved_at after a renewal under another token")
	assert.Equal(t, int64(2), touch([]int64{a, b}, tok, later), "renewed")
	assert.Equal(t, later, d.job(a).ReservedAt, "reserved_at of a")
	assert.Equal(t, later, d.job(b).ReservedAt, "reserved_at of b")
	assert.Equal(t, Epoch, d.job(c).ReservedAt, "reserved_at of c, not renewed")
	// A renewal within the same second writes the value the row holds; it
	// still counts, or the caller would take its claim for lost.
	assert.Equal(t, int64(1), touch([]int64{a}, tok, later), "renewed with an unchanged reserved_at")
	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(d.Ctx, []int64{c}, later) })
	assert.Equal(t, int64(0), touch([]int64{c}, tok, later.Add(time.Minute)), "renewed a completed job")
	assert.Equal(t, int64(0), touch(nil, tok, later), "renewed no ids")
}

func testDriverJobFindStale(t *testing.T, d *DriverEnv) {
	reserved := func(at time.Time, status driver.JobStatus) int64 {
		t.Helper()
		id := d.insertJob(newJob("default", "h"))
		d.updateJob(id, func(j *driver.Job) { j.Status, j.ReservedAt, j.Attempts, j.ClaimToken = status, at, 1, 7 })
		return id
	}
	before := Epoch.Add(time.Hour)
	newest := reserved(before.Add(-time.Second), driver.JobProcessing)
	oldest := reserved(before.Add(-time.Hour), driver.JobProcessing)
	middle := reserved(before.Add(-time.Minute), driver.JobProcessing)
	tie := reserved(before.Add(-time.Minute), driver.JobProcessing)
	reserved(before, driver.JobProcessing)                  // reserved exactly at the cut-off: not stale
	reserved(before.Add(time.Second), driver.JobProcessing) // fresh
	reserved(before.Add(-time.Hour), driver.JobPending)     // released
	reserved(before.Add(-time.Hour), driver.JobCompleted)   // finished
	find := func(limit int) []int64 {
		t.Helper()
		return jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
			return tx.JobFindStale(d.Ctx, driver.StaleParams{ReservedBefore: before, Limit: limit, Lock: driver.LockUpdate})
		}))
	}
	assert.Equal(t, []int64{oldest, middle, tie, newest}, find(10), "stale claims, oldest first (then by id)")
	assert.Equal(t, []int64{oldest, middle}, find(2), "stale claims with a limit of 2")
}

// testDriverJobFindStaleLease: a Go claim (its token names its current
// attempt) is stale once older than LeaseBefore; any other claim, such as
// Queuety PHP's (no token, or a token left from an earlier Go attempt),
// only once older than ReservedBefore.
func testDriverJobFindStaleLease(t *testing.T, d *DriverEnv) {
	now := Epoch.Add(time.Hour)
	leaseBefore, staleBefore := now.Add(-10*time.Second), now.Add(-10*time.Minute)
	claim := func(age time.Duration, attempts int, token int64) int64 {
		t.Helper()
		id := d.insertJob(newJob("default", "h"))
		d.updateJob(id, func(j *driver.Job) {
			j.Status, j.ReservedAt, j.Attempts, j.ClaimToken = driver.JobProcessing, now.Add(-age), attempts, token
		})
		return id
	}
	goDead := claim(time.Minute, 2, 5<<8+2)        // Go claim, not renewed for a minute
	goLive := claim(5*time.Second, 1, 5<<8+1)      // Go claim renewed 5 s ago
	phpRecent := claim(time.Minute, 1, 0)          // PHP claim a minute old
	phpOverGo := claim(time.Minute, 3, 5<<8+2)     // PHP claimed attempt 3 after Go's attempt 2
	phpOld := claim(time.Hour, 1, 0)               // PHP claim past the stale timeout
	goAtCutoff := claim(10*time.Second, 1, 6<<8+1) // exactly at the lease cut-off: not stale
	find := func(p driver.StaleParams) []int64 {
		t.Helper()
		p.Limit, p.Lock = 100, driver.LockUpdate
		return jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobFindStale(d.Ctx, p) }))
	}
	assert.Equal(t, []int64{phpOld, goDead}, find(driver.StaleParams{ReservedBefore: staleBefore, LeaseBefore: leaseBefore}),
		"stale: PHP claims past the stale timeout, Go claims past the lease timeout")
	assert.Equal(t, []int64{phpOld}, find(driver.StaleParams{ReservedBefore: staleBefore}), "without LeaseBefore every claim waits for ReservedBefore")
	for _, id := range []int64{goLive, phpRecent, phpOverGo, goAtCutoff} {
		assert.NotContains(t, find(driver.StaleParams{ReservedBefore: staleBefore, LeaseBefore: leaseBefore}), id, "job %d is not stale", id)
	}
}

func testDriverJobFindTimedOut(t *testing.T, d *DriverEnv) {
	now := Epoch.Add(500 * time.Millisecond)
	job := func(status driver.JobStatus, set func(j *driver.Job)) int64 {
		t.Helper()
		id := d.insertJob(newJob("default", "h"))
		d.updateJob(id, func(j *driver.Job) {
			j.Status = status
			if status == driver.JobProcessing {
				j.ReservedAt, j.Attempts, j.ClaimToken = Epoch, 1, 7
			}
			set(j)
		})
		return id
	}
	toStart := job(driver.JobPending, func(j *driver.Job) { j.ScheduleToStartAt = now.Add(-time.Second) })
	toCloseAtNow := job(driver.JobPending, func(j *driver.Job) { j.ScheduleToCloseAt = now })
	startToClose := job(driver.JobProcessing, func(j *driver.Job) { j.StartToCloseAt = now.Add(-time.Microsecond) })
	heartbeat := job(driver.JobProcessing, func(j *driver.Job) {
		j.HeartbeatDeadline = now.Add(-time.Millisecond)
		j.StartToCloseAt = now.Add(time.Hour)
	})
	several := job(driver.JobProcessing, func(j *driver.Job) {
		j.ScheduleToCloseAt, j.StartToCloseAt, j.HeartbeatDeadline = now.Add(-time.Minute), now.Add(-time.Minute), now.Add(-time.Minute)
	})
	job(driver.JobProcessing, func(j *driver.Job) { j.HeartbeatDeadline = now.Add(time.Microsecond) }) // a microsecond early
	job(driver.JobPending, func(j *driver.Job) { j.ScheduleToStartAt = now.Add(time.Second) })
	job(driver.JobPending, func(*driver.Job) {}) // no deadline
	find := func(limit int) []*driver.Job {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
			return tx.JobFindTimedOut(d.Ctx, driver.TimedOutParams{Now: now, Limit: limit, Lock: driver.LockNone})
		})
	}
	all := find(100)
	assert.ElementsMatch(t, []int64{toStart, toCloseAtNow, startToClose, heartbeat, several}, jobIDs(all),
		"jobs with a deadline at or before now, each once")
	for _, j := range all {
		assert.NotEmptyf(t, j.Handler, "job %d is returned as a whole row", j.ID)
	}
	assert.Len(t, find(2), 2, "timed-out jobs with a limit of 2")
}

func testDriverJobListByWorkflow(t *testing.T, d *DriverEnv) {
	in := func(wf int64, status driver.JobStatus) *driver.Job {
		j := newJob("default", "step")
		j.WorkflowID, j.Status = wf, status
		return j
	}
	ids := d.insertJobs(in(5, driver.JobPending), in(6, driver.JobPending), in(5, driver.JobCompleted), in(0, driver.JobPending),
		in(5, driver.JobBuried), in(5, driver.JobProcessing))
	list := func(statuses ...driver.JobStatus) []int64 {
		t.Helper()
		return jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
			return tx.JobListByWorkflow(d.Ctx, 5, statuses, driver.LockUpdate)
		}))
	}
	assert.Equal(t, []int64{ids[0], ids[2], ids[4], ids[5]}, list(), "jobs of workflow 5, in id order")
	assert.Equal(t, []int64{ids[0], ids[5]}, list(driver.JobPending, driver.JobProcessing), "active jobs of workflow 5")
	assert.Equal(t, []int64{ids[4]}, list(driver.JobBuried), "buried jobs of workflow 5")
	assert.Empty(t, list(driver.JobFailed), "failed jobs of workflow 5")
	// JobListManyTx is optional: a store without it is asked outside the
	// transaction, so that the skip never leaves one open.
	if !inTx(d, func(tx driver.Tx) (bool, error) { _, ok := tx.(driver.JobListManyTx); return ok, nil }) {
		t.Skip("the store's transactions have no JobListByWorkflows (driver.JobListManyTx)")
	}
	listMany := func(wfs []int64, statuses ...driver.JobStatus) []int64 {
		t.Helper()
		return jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) {
			return tx.(driver.JobListManyTx).JobListByWorkflows(d.Ctx, wfs, statuses, driver.LockUpdate)
		}))
	}
	assert.Equal(t, []int64{ids[0], ids[1], ids[2], ids[4], ids[5]}, listMany([]int64{6, 5}), "jobs of workflows 5 and 6, in id order")
	assert.Equal(t, []int64{ids[0], ids[1], ids[5]}, listMany([]int64{5, 6, 7}, driver.JobPending, driver.JobProcessing),
		"active jobs of workflows 5, 6 and 7")
	assert.Equal(t, []int64{ids[1]}, listMany([]int64{6}), "jobs of workflow 6 alone")
	assert.Empty(t, listMany(nil), "no workflow")
}

func testDriverJobFindActiveByHash(t *testing.T, d *DriverEnv) {
	hashA, hashB := strings.Repeat("a", 64), strings.Repeat("b", 64)
	with := func(h, hash string, status driver.JobStatus) *driver.Job {
		j := newJob("default", h)
		j.PayloadHash, j.Status = hash, status
		return j
	}
	ids := d.insertJobs(with("report", hashA, driver.JobCompleted), with("report", hashA, driver.JobProcessing),
		with("report", hashB, driver.JobBuried), with("other", hashB, driver.JobPending))
	find := func(h, hash string) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobFindActiveByHash(d.Ctx, h, hash) })
	}
	assert.Equal(t, ids[1], find("report", hashA), "the processing job with the hash")
	assert.Zero(t, find("report", hashB), "a buried job is not active")
	assert.Equal(t, ids[3], find("other", hashB), "the pending job of the other handler")
	assert.Zero(t, find("missing", hashA), "no job of that handler")
	findAny := func(h string, hashes ...string) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobFindActiveByHash(d.Ctx, h, hashes...) })
	}
	assert.Equal(t, ids[1], findAny("report", hashB, strings.Repeat("c", 64), hashA), "one of several hashes")
	assert.Zero(t, findAny("report", hashB, strings.Repeat("c", 64)), "none of several hashes")
	assert.Zero(t, findAny("report"), "no hash")
}

func testDriverJobFindActiveUnique(t *testing.T, d *DriverEnv) {
	with := func(h, payload, hash string, status driver.JobStatus) *driver.Job {
		j := newJob("default", h)
		j.Payload, j.PayloadHash, j.Status = []byte(payload), hash, status
		return j
	}
	hash := strings.Repeat("a", 64)
	ids := d.insertJobs(
		with("report", `{"b":1,"a":2}`, hash, driver.JobPending),
		with("report", `{"a":2,"b":1}`, hash, driver.JobProcessing),
		with("report", `{"a":2,"b":3}`, hash, driver.JobCompleted),
		with("report", `{"a":2,"b":4}`, "", driver.JobPending),
		with("report", `{"a":22,"b":1}`, hash, driver.JobPending),
		with("other", `{"a":2,"b":1}`, hash, driver.JobPending))
	find := func(h string, n int) []int64 {
		t.Helper()
		var out []int64
		d.Tx(func(tx driver.Tx) error {
			jobs, err := tx.JobFindActiveUnique(d.Ctx, h, n)
			out = out[:0]
			for _, j := range jobs {
				out = append(out, j.ID)
				assert.NotEmpty(t, j.Payload, "payload of job %d", j.ID)
			}
			return err
		})
		return out
	}
	assert.Equal(t, []int64{ids[0], ids[1]}, find("report", len(`{"a":2,"b":1}`)),
		"active jobs with a hash and a payload of that length, in id order")
	assert.Equal(t, []int64{ids[4]}, find("report", len(`{"a":22,"b":1}`)), "another length")
	assert.Empty(t, find("report", 3), "no payload of that length")
}

func testDriverJobCountActive(t *testing.T, d *DriverEnv) {
	with := func(h string, status driver.JobStatus) *driver.Job {
		j := newJob("default", h)
		j.Status = status
		return j
	}
	d.insertJobs(with("h", driver.JobPending), with("h", driver.JobPending), with("h", driver.JobProcessing),
		with("h", driver.JobCompleted), with("h", driver.JobBuried), with("h", driver.JobFailed), with("other", driver.JobPending))
	count := func(h string) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobCountActiveByHandler(d.Ctx, h) })
	}
	assert.Equal(t, int64(3), count("h"), "pending and processing jobs of h")
	assert.Equal(t, int64(1), count("other"), "active jobs of other")
	assert.Zero(t, count("missing"), "active jobs of an unknown handler")
}

func testDriverJobList(t *testing.T, d *DriverEnv) {
	mk := func(q, h string, status driver.JobStatus, wf int64) *driver.Job {
		j := newJob(q, h)
		j.Status, j.WorkflowID = status, wf
		return j
	}
	ids := d.insertJobs(
		mk("mail", "send", driver.JobPending, 0),     // 0
		mk("mail", "send", driver.JobCompleted, 0),   // 1
		mk("mail", "bounce", driver.JobPending, 3),   // 2
		mk("reports", "send", driver.JobBuried, 3),   // 3
		mk("reports", "build", driver.JobPending, 4), // 4
	)
	list := func(f driver.JobFilter) []int64 {
		t.Helper()
		return jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobList(d.Ctx, f) }))
	}
	assert.Equal(t, ids, list(driver.JobFilter{}), "no filter: every job in id order")
	assert.Equal(t, []int64{ids[0], ids[1], ids[2]}, list(driver.JobFilter{Queue: "mail"}), "queue")
	assert.Equal(t, []int64{ids[0], ids[2], ids[4]}, list(driver.JobFilter{Status: driver.JobPending}), "status")
	assert.Equal(t, []int64{ids[0], ids[1], ids[3]}, list(driver.JobFilter{Handler: "send"}), "handler")
	assert.Equal(t, []int64{ids[2], ids[3]}, list(driver.JobFilter{WorkflowID: 3}), "workflow")
	assert.Equal(t, []int64{ids[3], ids[4]}, list(driver.JobFilter{AfterID: ids[2]}), "after id")
	assert.Equal(t, []int64{ids[0], ids[1]}, list(driver.JobFilter{Limit: 2}), "limit")
	assert.Equal(t, []int64{ids[0]}, list(driver.JobFilter{Queue: "mail", Status: driver.JobPending, Handler: "send"}),
		"queue, status and handler together")
	assert.Equal(t, []int64{ids[3]}, list(driver.JobFilter{Handler: "send", WorkflowID: 3}), "handler and workflow together")
	assert.Equal(t, []int64{ids[4]}, list(driver.JobFilter{Status: driver.JobPending, AfterID: ids[2], Limit: 5}),
		"status after an id")
	assert.Empty(t, list(driver.JobFilter{Queue: "missing"}), "an unknown queue")

	// Without a limit, a list stops at 100 rows.
	many := make([]*driver.Job, 110)
	for i := range many {
		many[i] = newJob("bulk", "h")
	}
	d.insertJobs(many...)
	assert.Len(t, list(driver.JobFilter{Queue: "bulk"}), 100, "rows listed without a limit")
	assert.Len(t, list(driver.JobFilter{Queue: "bulk", Limit: 500}), 110, "rows listed with a limit of 500")
}

func testDriverJobCounts(t *testing.T, d *DriverEnv) {
	with := func(q string, status driver.JobStatus) *driver.Job {
		j := newJob(q, "h")
		j.Status = status
		return j
	}
	d.insertJobs(with("a", driver.JobPending), with("a", driver.JobPending), with("a", driver.JobBuried),
		with("b", driver.JobCompleted), with("b", driver.JobPending))
	counts := inTx(d, func(tx driver.Tx) ([]driver.QueueCount, error) { return tx.JobCounts(d.Ctx) })
	assert.ElementsMatch(t, []driver.QueueCount{
		{Queue: "a", Status: driver.JobPending, Count: 2},
		{Queue: "a", Status: driver.JobBuried, Count: 1},
		{Queue: "b", Status: driver.JobCompleted, Count: 1},
		{Queue: "b", Status: driver.JobPending, Count: 1},
	}, counts, "counts by queue and status")
}

// insertOldestDueJobs inserts jobs in queues a to d around an hour after
// Epoch and returns that time: queue a's oldest due pending job is 30
// minutes before it, b's 5 seconds before; c has a pending job not yet
// due and d none pending.
func (d *DriverEnv) insertOldestDueJobs() time.Time {
	job := func(q string, status driver.JobStatus, due time.Time) *driver.Job {
		j := newJob(q, "h")
		j.Status, j.AvailableAt = status, due
		return j
	}
	now := Epoch.Add(time.Hour)
	d.insertJobs(
		job("a", driver.JobPending, now.Add(-10*time.Minute)),
		job("a", driver.JobPending, now.Add(-30*time.Minute)), // the oldest due one
		job("a", driver.JobPending, now.Add(time.Minute)),     // not due yet
		job("a", driver.JobProcessing, now.Add(-2*time.Hour)),
		job("a", driver.JobBuried, now.Add(-3*time.Hour)),
		job("b", driver.JobPending, now.Add(-5*time.Second)),
		job("c", driver.JobPending, now.Add(time.Hour)),
		job("d", driver.JobCompleted, now.Add(-time.Hour)),
	)
	return now
}

func testDriverJobOldestDue(t *testing.T, d *DriverEnv) {
	now := d.insertOldestDueJobs()
	oldest := func(q string) time.Time {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (time.Time, error) { return tx.JobOldestDue(d.Ctx, q, now) })
	}
	assert.True(t, now.Add(-30*time.Minute).Equal(oldest("a")), "queue a: the earliest due pending job, got %v", oldest("a"))
	assert.True(t, now.Add(-5*time.Second).Equal(oldest("b")), "queue b, got %v", oldest("b"))
	assert.True(t, oldest("c").IsZero(), "queue c: nothing due yet")
	assert.True(t, oldest("d").IsZero(), "queue d: nothing pending")
	assert.True(t, oldest("missing").IsZero(), "an unknown queue")
}

func testDriverJobDeleteFinished(t *testing.T, d *DriverEnv) {
	cutoff := Epoch.Add(24 * time.Hour)
	finished := func(status driver.JobStatus, completed time.Time) int64 {
		t.Helper()
		id := d.insertJob(newJob("default", "h"))
		d.updateJob(id, func(j *driver.Job) { j.Status, j.CompletedAt = status, completed })
		return id
	}
	var old []int64
	for i := range 5 {
		old = append(old, finished(driver.JobCompleted, cutoff.Add(-time.Duration(i+1)*time.Hour)))
	}
	atCutoff := finished(driver.JobCompleted, cutoff)
	recent := finished(driver.JobCompleted, cutoff.Add(time.Hour))
	buried := finished(driver.JobBuried, cutoff.Add(-time.Hour))
	pending := d.insertJob(newJob("default", "h"))
	purge := func(limit int) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobDeleteFinished(d.Ctx, cutoff, limit) })
	}
	assert.Equal(t, int64(3), purge(3), "deleted with a limit of 3")
	assert.Equal(t, int64(2), purge(3), "deleted by the second purge")
	assert.Equal(t, int64(0), purge(3), "deleted once nothing old is left")
	left := jobIDs(inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobList(d.Ctx, driver.JobFilter{}) }))
	assert.Equal(t, []int64{atCutoff, recent, buried, pending}, left, "jobs kept: completed at or after the cut-off, and unfinished ones")
	for _, id := range old {
		err := d.TxErr(func(tx driver.Tx) error { _, err := tx.JobGet(d.Ctx, id, driver.LockNone); return err })
		assert.ErrorIsf(t, err, driver.ErrNotFound, "job %d completed before the cut-off", id)
	}
}
