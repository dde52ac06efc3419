package storetest

// This file holds the cases of rows that nothing would ever move on: they
// are recovered, or failed with an error a person can act on.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Jobs/StaleRecoveryOfRowWithoutReservedAt", testStaleWithoutReservedAt)
}

// testStaleWithoutReservedAt: a processing row with no reserved_at (no
// claim time, so nothing renews it and no timeout counts from it) is
// recovered by the stale sweep at once: retried while attempts remain,
// buried with an error that says what was wrong otherwise. A processing
// row claimed just now is left alone.
func testStaleWithoutReservedAt(t *testing.T, e *Env) {
	unreserved := func(attempts int) *driver.Job {
		j := newJob("default", "h")
		j.Status, j.Attempts = driver.JobProcessing, attempts
		return j
	}
	fresh := unreserved(1)
	fresh.ReservedAt = e.Clock.Now()
	jobs := []*driver.Job{unreserved(1), unreserved(3), fresh}
	require.NoError(t, e.C.Store().InTx(e.Ctx, func(tx driver.Tx) error { return tx.JobInsert(e.Ctx, jobs) }))
	retried, buried, running := jobs[0].ID, jobs[1].ID, jobs[2].ID

	assert.Equal(t, 2, e.recoverStale(), "recovered")
	j := e.Job(retried)
	assert.Equal(t, queuety.JobPending, j.Status, "the row with attempts left: status")
	assert.Equal(t, 1, j.Attempts, "the row with attempts left: attempts")
	assert.Equal(t, "retried", strings.Join(e.Events(driver.LogFilter{JobID: retried}), ","), "the row with attempts left: logs")
	j = e.Job(buried)
	assert.Equal(t, queuety.JobBuried, j.Status, "the row without attempts left: status")
	assert.Equal(t, "Stale: the job was processing with no reserved_at (no claim time), so no worker held it.", j.ErrorMessage, "error")
	assert.Equal(t, "buried", strings.Join(e.Events(driver.LogFilter{JobID: buried}), ","), "the row without attempts left: logs")
	assert.Equal(t, queuety.JobProcessing, e.Job(running).Status, "the row claimed just now")
	assert.Equal(t, 0, e.recoverStale(), "recovered by a second sweep")
}
