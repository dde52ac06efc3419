package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// journalRows counts the held claims' journal rows of e's tables.
func (e *holdEnv) journalRows(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+strings.TrimSuffix(e.jobs, "jobs")+"go_held_claims").Scan(&n))
	return n
}

// events reads a job's log events in order, comma-separated.
func (e *holdEnv) events(t *testing.T, id int64) string {
	t.Helper()
	rows, err := e.admin.Query("SELECT event FROM "+e.logs+" WHERE job_id = ? ORDER BY id", id)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ev string
		require.NoError(t, rows.Scan(&ev))
		out = append(out, ev)
	}
	require.NoError(t, rows.Err())
	return strings.Join(out, ",")
}

// sweepLater runs the sweeps once, as a process whose clock reads ahead
// by ahead would (a worker without the jobs' handler, so it runs none),
// and returns how many jobs stale recovery took back.
func (e *holdEnv) sweepLater(t *testing.T, ahead time.Duration) int {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, e.dsn, queuety.WithClock(queuety.NewFakeClock(time.Now().Add(ahead))),
		queuety.WithLogger(quiet()), queuety.SkipMigrate())
	require.NoError(t, err)
	defer c.Close()
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()))
	w.HandleJob("unrelated", func(context.Context, queuety.Payload) error { return nil })
	st, err := w.RunOnce(ctx, 100*time.Millisecond)
	require.NoError(t, err)
	return st.Swept.JobsRecovered
}

// TestHeldClaimOfADeadProcessCountsAnAttempt: a worker process that holds
// its claim of a job dies in the job's handler (os.Exit), so the held
// transaction never commits and the job reads pending with no attempt
// counted; stale recovery, once the claim's journal row has expired,
// counts the attempt as it does for a normal claim's dead worker (a
// 'retried' row, the job due again at once), and after max attempts such
// deaths buries the job with the stale error.
func TestHeldClaimOfADeadProcessCountsAnAttempt(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	id, err := e.c.Dispatch(ctx, "crash", nil, queuety.MaxAttempts(2))
	require.NoError(t, err)
	crash := func() { crashHeldChild(t, e) }
	const later = 10 * time.Minute // past any held transaction's journal expiry

	crash()
	e.waitStatus(t, "pending", id) // the server rolled the held claim back
	_, att, _ := e.row(t, id)
	require.Equal(t, 0, att, "attempts after the death: the held claim wrote nothing")
	require.Equal(t, 1, e.journalRows(t), "the held claim's journal row")
	assert.Zero(t, e.sweepLater(t, 0), "jobs taken back before the row expires")
	require.Equal(t, 1, e.sweepLater(t, later), "jobs taken back")
	s, att, tok := e.row(t, id)
	assert.Equal(t, "pending", s)
	assert.Equal(t, 1, att, "the dead attempt counted")
	assert.False(t, tok)
	assert.Equal(t, "retried", e.events(t, id))
	assert.Zero(t, e.journalRows(t), "journal rows after the sweep")
	assert.Zero(t, e.sweepLater(t, later), "counted once")

	crash()
	e.waitStatus(t, "pending", id)
	require.Equal(t, 1, e.sweepLater(t, later), "jobs taken back")
	j, err := e.c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "after max attempts deaths")
	assert.Equal(t, 2, j.Attempts)
	assert.Equal(t, queuetytype.StaleMessage, j.ErrorMessage)
	assert.Equal(t, "retried,buried", e.events(t, id))
	assert.Zero(t, e.journalRows(t))
}

// TestLiveHeldClaimIsNotTakenBack: while a held claim's handler runs, its
// journal row is there, and stale recovery, even far past the row's
// expiry, counts nothing and keeps the row (the jobs are locked); once the
// handler returns, the job is completed with one attempt and the row is
// gone with the commit.
func TestLiveHeldClaimIsNotTakenBack(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	started := make(chan int64, 2)
	release := make(chan struct{})
	w := holdWorker(e.c, 30*time.Second, worker.Concurrency(2))
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		started <- info.JobID
		<-release
		return nil
	})
	runWorker(t, w)
	receive(t, started, "a held job's start")
	receive(t, started, "a held job's start")
	require.Equal(t, 1, e.journalRows(t), "one journal row for the held transaction")
	assert.Zero(t, e.sweepLater(t, time.Hour), "jobs taken back while held")
	assert.Equal(t, 1, e.journalRows(t), "the live claim's row stays")
	for _, id := range ids {
		s, att, _ := e.row(t, id)
		assert.Equal(t, "pending", s)
		assert.Equal(t, 0, att)
	}
	close(release)
	e.completedOnce(t, ids...)
	assert.Zero(t, e.journalRows(t), "the row went with the commit")
	assert.Zero(t, e.sweepLater(t, time.Hour))
	e.completedOnce(t, ids...)
}

// TestHeldClaimRolledBackInALiveProcessDeletesItsJournalRow: a held
// transaction whose connection dies while its process lives deletes its
// journal row once the process learns of it, so stale recovery counts no
// attempt for the jobs, which run again.
func TestHeldClaimRolledBackInALiveProcessDeletesItsJournalRow(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 1)
	started := make(chan int64, 4)
	release := make(chan struct{})
	var once sync.Once
	// The bound outlasts the lock-wait poll of killHolder on a loaded
	// machine: past the bound the transaction would claim the job and
	// commit, and no read would wait for it any more.
	w := holdWorker(e.c, 5*time.Second)
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		first := false
		once.Do(func() { first = true })
		if first {
			started <- info.JobID
			<-release
		}
		return nil
	})
	run := runWorker(t, w)
	receive(t, started, "the held job's start")
	require.Equal(t, 1, e.journalRows(t))
	killHolder(t, e, ids[0])
	close(release) // the settle finds the connection gone
	require.Eventually(t, func() bool { return e.journalRows(t) == 0 }, 10*time.Second, 5*time.Millisecond,
		"the journal row of the rolled-back claim is deleted")
	run.cancel()
	receive(t, run.done, "the held worker's return")
	assert.Zero(t, e.sweepLater(t, time.Hour), "jobs taken back")
	s, att, _ := e.row(t, ids[0])
	if s == "pending" {
		assert.Equal(t, 0, att, "no attempt counted")
	}
}

// TestHeldClaimWithoutItsJournalClaimsAsUsual: when the journal row cannot
// be written (here its table is gone), the worker does not hold the
// claim: the job is claimed as usual (its handler reads it processing)
// and completed.
func TestHeldClaimWithoutItsJournalClaimsAsUsual(t *testing.T) {
	e := newHoldEnv(t)
	journal := strings.TrimSuffix(e.jobs, "jobs") + "go_held_claims"
	_, err := e.admin.Exec("DROP TABLE " + journal)
	require.NoError(t, err)
	ids := e.dispatchHeld(t, 3)
	seen := make(chan string, 3)
	w := holdWorker(e.c, 5*time.Second)
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		s, _, _ := e.row(t, info.JobID)
		seen <- s
		return nil
	})
	runWorker(t, w)
	e.completedOnce(t, ids...)
	for range ids {
		assert.Equal(t, "processing", receive(t, seen, "a handler's read of its row"), "claimed as usual")
	}
}

// crashHeldChild runs a held child worker (runHeldChild) on e's tables
// and waits for it to die in a "crash" job's handler.
func crashHeldChild(t *testing.T, e *holdEnv) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), heldChildEnv+"="+e.dsn)
	var stderr strings.Builder
	child.Stderr = &stderr
	require.NoError(t, child.Start())
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	var exit *exec.ExitError
	err := receive(t, done, "the child's exit in the handler")
	require.True(t, errors.As(err, &exit) && exit.ExitCode() == heldChildExit, "child exit: %v (stderr: %s)", err, stderr.String())
}

// TestGatedStaleSweepFindsADeadHeldClaim: behind the sweep gate, a running
// worker's stale sweep runs for an expired journal row of a held claim
// whose process died, though no job is processing, and counts its
// attempt.
func TestGatedStaleSweepFindsADeadHeldClaim(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	id, err := e.c.Dispatch(ctx, "crash", nil)
	require.NoError(t, err)
	crashHeldChild(t, e)
	e.waitStatus(t, "pending", id)

	clock := queuety.NewFakeClock(time.Now().Add(10 * time.Minute))
	c, err := queuety.Open(ctx, e.dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()), queuety.SkipMigrate())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	g := runSwept(t, c, func(w *worker.Worker) {
		w.HandleJob("unrelated", func(context.Context, queuety.Payload) error { return nil })
	}, worker.NoRetention())
	for {
		s := receive(t, g.sweeps, "a sweep")
		require.NoError(t, s.err, s.task)
		if s.task == deadline.SweepStale {
			assert.Equal(t, 1, s.n, "jobs the stale sweep took back")
			break
		}
	}
	_, att, _ := e.row(t, id)
	assert.Equal(t, 1, att, "the dead attempt counted")
	assert.Zero(t, e.journalRows(t))
}

// TestExpiredJournalRowLeavesJobsThatMovedOn: of an expired journal row's
// jobs, stale recovery counts an attempt only for the one still pending
// with the attempts the row names; a completed job, one counted since
// and one claimed again are left as they are, and the row is deleted.
func TestExpiredJournalRowLeavesJobsThatMovedOn(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 4)
	for i, q := range []string{
		"UPDATE " + e.jobs + " SET status = 'completed', attempts = 1, completed_at = NOW() WHERE id = ?",
		"UPDATE " + e.jobs + " SET attempts = 1 WHERE id = ?",
		"UPDATE " + e.jobs + " SET status = 'processing', attempts = 1, reserved_at = NOW(), claim_token = 1 WHERE id = ?",
	} {
		_, err := e.admin.Exec(q, ids[i])
		require.NoError(t, err)
	}
	var jobs []string
	for _, id := range ids {
		jobs = append(jobs, fmt.Sprintf("%d:0", id))
	}
	_, err := e.admin.Exec("INSERT INTO "+strings.TrimSuffix(e.jobs, "jobs")+"go_held_claims (jobs, expires_at) VALUES (?, ?)",
		strings.Join(jobs, ","), time.Now().UTC().Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, e.sweepLater(t, 0), "jobs taken back")
	for i, want := range []struct {
		status   string
		attempts int
	}{{"completed", 1}, {"pending", 1}, {"processing", 1}, {"pending", 1}} {
		s, att, _ := e.row(t, ids[i])
		assert.Equal(t, want.status, s, "job %d", i)
		assert.Equal(t, want.attempts, att, "job %d", i)
	}
	assert.Equal(t, "retried", e.events(t, ids[3]))
	assert.Empty(t, e.events(t, ids[1]))
	assert.Zero(t, e.journalRows(t))
}

// TestStaleRecoveryErrorLeavesHeldRecoveryToRun: a stale job whose
// recovery fails every time (a trigger refuses its update) must not keep
// the held claims of dead processes from being recovered in the same
// pass; the pass still reports the failure.
func TestStaleRecoveryErrorLeavesHeldRecoveryToRun(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	_, err := e.admin.Exec("UPDATE "+e.jobs+" SET status = 'processing', attempts = 1, reserved_at = NOW() - INTERVAL 1 DAY, claim_token = 1 WHERE id = ?", ids[0])
	require.NoError(t, err)
	trigger := strings.TrimSuffix(e.jobs, "jobs") + "refuse_stale"
	_, err = e.admin.Exec(fmt.Sprintf("CREATE TRIGGER %s BEFORE UPDATE ON %s FOR EACH ROW BEGIN IF OLD.id = %d THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'stale recovery refused'; END IF; END", trigger, e.jobs, ids[0]))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec("DROP TRIGGER IF EXISTS " + trigger) })
	_, err = e.admin.Exec("INSERT INTO "+strings.TrimSuffix(e.jobs, "jobs")+"go_held_claims (jobs, expires_at) VALUES (?, ?)",
		fmt.Sprintf("%d:0", ids[1]), time.Now().UTC().Add(-time.Minute))
	require.NoError(t, err)

	n, err := deadline.New(e.c).Stale(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stale recovery refused")
	assert.Equal(t, 1, n, "held jobs recovered in the same pass")
	s, att, _ := e.row(t, ids[1])
	assert.Equal(t, "pending", s)
	assert.Equal(t, 1, att, "the dead process's attempt counted")
	assert.Equal(t, "retried", e.events(t, ids[1]))
	assert.Zero(t, e.journalRows(t))
	s, att, _ = e.row(t, ids[0])
	assert.Equal(t, "processing", s, "the refused job untouched")
	assert.Equal(t, 1, att)
}
