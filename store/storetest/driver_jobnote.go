package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the job note (internal/jobnote) a transaction's
// context carries: the completions tell it which jobs they completed, and
// an attempt rolled back leaves it as it was.
func init() {
	registerDriver("Jobs/CompletionsTellTheJobNote", testDriverCompletionsTellTheNote)
	registerDriver("Tx/RolledBackAttemptLeavesTheJobNote", testDriverRolledBackLeavesTheNote)
}

// errHook is the error of a completion hook that fails.
var errHook = errors.New("the completion hook failed")

// testDriverCompletionsTellTheNote: each completion of the store (Tx's
// JobComplete and JobCompleteClaimed, a held claim's JobCompleteHeld)
// calls the completion hook of its context's note with the ids it
// completed, in its own transaction; a fenced completion that changed no
// row does not; the hook's error fails the completion, and its
// transaction writes nothing.
func testDriverCompletionsTellTheNote(t *testing.T, d *DriverEnv) {
	ctx, note := jobnote.With(d.Ctx)
	var told [][]int64
	var fail error
	note.OnCompleted(func(_ context.Context, tx driver.Tx, ids []int64) error {
		if _, ok := tx.(driver.DependentsTx); !ok {
			t.Errorf("the hook's transaction %T has no dependents reads", tx)
		}
		told = append(told, slices.Clone(ids))
		return fail
	})
	jobs := d.claimAll(4, "h", 7)
	a, b, c, x := jobs[0].ID, jobs[1].ID, jobs[2].ID, jobs[3].ID
	tok := jobs[0].ClaimToken
	at := Epoch.Add(time.Second)

	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(ctx, []int64{a}, at) })
	assert.Equal(t, [][]int64{{a}}, told, "told after JobComplete")
	n := inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobCompleteClaimed(ctx, []int64{b, c}, tok+1, 1, at) })
	require.Zero(t, n, "completed under another claim token")
	assert.Len(t, told, 1, "told after a fenced JobCompleteClaimed that changed nothing")
	n = inTx(d, func(tx driver.Tx) (int64, error) { return tx.JobCompleteClaimed(ctx, []int64{b, c}, tok, 1, at) })
	require.EqualValues(t, 2, n, "completed under the claim")
	assert.Equal(t, [][]int64{{a}, {b, c}}, told, "told after JobCompleteClaimed")
	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(ctx, nil, at) })
	assert.Len(t, told, 2, "told after completing no job")
	d.Tx(func(tx driver.Tx) error { return tx.JobComplete(d.Ctx, []int64{x}, at) })
	assert.Len(t, told, 2, "told by a completion without the note")

	fail = errHook
	y := d.claimAll(1, "y", 8)[0].ID
	err := d.TxErr(func(tx driver.Tx) error { return tx.JobComplete(ctx, []int64{y}, at) })
	require.ErrorIs(t, err, errHook, "the completion fails with its hook")
	assert.Equal(t, driver.JobProcessing, d.job(y).Status, "status of the job whose completion failed")
	fail = nil
	told = nil

	hs, ok := d.S.(driver.HeldClaimer)
	if !ok || !hs.HoldsClaims() {
		return
	}
	held := d.insertJobs(newJob("default", "held"), newJob("default", "held"))
	err = hs.InHeldTx(ctx, 5*time.Second, func(tx driver.HeldTx) error {
		locked, err := tx.JobLockHeld(ctx, claimParams("default", Epoch, 10, "held"))
		if err != nil {
			return err
		}
		require.ElementsMatch(t, held, jobIDs(locked), "held jobs")
		return tx.JobCompleteHeld(ctx, held, 9<<8, at, at)
	})
	require.NoError(t, err)
	require.Len(t, told, 1, "told after JobCompleteHeld")
	assert.ElementsMatch(t, held, told[0], "ids told after JobCompleteHeld")
}

// testDriverRolledBackLeavesTheNote: the jobs a transaction notes stay
// noted only if it commits. One whose function fails (a held one too)
// leaves the note as it was before it began, even the count of the key it
// had noted last.
func testDriverRolledBackLeavesTheNote(t *testing.T, d *DriverEnv) {
	ctx, note := jobnote.With(d.Ctx)
	errBack := errors.New("rolled back")
	d.Tx(func(tx driver.Tx) error { return tx.JobInsert(ctx, []*driver.Job{newJob("default", "kept")}) })
	err := d.S.InTx(ctx, func(tx driver.Tx) error {
		if err := tx.JobInsert(ctx, []*driver.Job{newJob("default", "kept"), newJob("default", "gone")}); err != nil {
			return err
		}
		jobnote.Any(ctx)
		return errBack
	})
	require.ErrorIs(t, err, errBack)
	if hs, ok := d.S.(driver.HeldClaimer); ok && hs.HoldsClaims() {
		err = hs.InHeldTx(ctx, 5*time.Second, func(tx driver.HeldTx) error {
			if err := tx.JobInsert(ctx, []*driver.Job{newJob("default", "gone")}); err != nil {
				return err
			}
			return errBack
		})
		require.ErrorIs(t, err, errBack)
	}
	counts, anyJobs := note.Take()
	assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: "kept"}: 1}, counts, "jobs noted")
	assert.False(t, anyJobs, "jobs of unknown number noted")
}
