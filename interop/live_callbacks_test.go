package interop_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	batchpkg "github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestLivePHPStaleRecoveryRetriesBridgeJob: a Go worker finishes a batch
// whose then callback is a PHP class and hands it to Queuety PHP's bridge
// class. The PHP worker that claimed the bridge job dies before it runs
// the callback. Queuety PHP's own stale recovery hands the job back (its
// payload's runtime options give it attempts, whatever the bridge class's
// config() says), and the next PHP worker calls the class once.
func TestLivePHPStaleRecoveryRetriesBridgeJob(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "marker.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)), queuety.WithPHPBatchCallbacks("php-callbacks"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	batch, err := c.NewBatch(queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": 1}}).
		OnQueue("go-jobs").Then(hBatchThen).Dispatch(ctx)
	require.NoError(t, err)
	w := worker.New(c, worker.Queues("go-jobs"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	goJobTwins(w)
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	bridge, err := c.ListJobs(ctx, driver.JobFilter{Queue: "php-callbacks"})
	require.NoError(t, err)
	require.Len(t, bridge, 1, "the then callback handed to PHP")
	require.Equal(t, batchpkg.HandlerPHPCallback, bridge[0].Handler, "bridge job handler")
	id := bridge[0].ID

	// A PHP worker claimed it (attempt 1) and died: the row stays
	// processing, its claim time long past PHP's stale timeout.
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		j.Status, j.Attempts, j.ReservedAt = driver.JobProcessing, 1, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		return tx.JobUpdate(ctx, j)
	}))
	out := strings.TrimSpace(php.eval(`echo \Queuety\Queuety::recover_stale_jobs();`))
	recovered, err := strconv.Atoi(out)
	require.NoError(t, err, "PHP printed %q", out)
	assert.Equal(t, 1, recovered, "jobs PHP's stale recovery handled")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.JobPending, j.Status, "bridge job after PHP's stale recovery: %s", j.ErrorMessage)
	assert.Empty(t, readMarker(t, marker), "the callback has not run yet")

	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--queue=php-callbacks")
	assert.Equal(t, 1, worked.Processed, "bridge jobs PHP ran")
	j, err = c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "bridge job: %s", j.ErrorMessage)
	calls := readMarker(t, marker)
	require.Len(t, calls, 1, "PHP callback calls: %s", jsonString(calls))
	assert.Equal(t, hBatchThen, calls[0].Callback, "the class PHP called")
	require.NotNil(t, calls[0].Batch, "the batch the class got")
	assert.Equal(t, batch, calls[0].Batch.ID, "batch id")
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
