package interop_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestLiveConcurrencyGroupBothWays: Queuety PHP's
// ->concurrency_group($group, $limit) and Go's ConcurrencyGroup +
// ConcurrencyLimit write the same columns, and each side honours the limit
// while the other holds the group's slot: PHP unclaims (its rows come back
// as they were), Go leaves the jobs pending.
func TestLiveConcurrencyGroupBothWays(t *testing.T) {
	c, php := newLive(t)
	ctx := context.Background()
	var ids struct {
		IDs []int64 `json:"ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
$ids = array();
for ( $i = 1; $i <= 2; $i++ ) {
	$ids[] = \Queuety\Queuety::dispatch( 'grp.job', array( 'i' => $i ) )->on_queue( 'grp' )->concurrency_group( 'solo', 1 )->cost_units( 3 )->id();
}
echo json_encode( array( 'ids' => $ids ) );`)), &ids))
	require.Len(t, ids.IDs, 2)
	goID, err := c.Dispatch(ctx, "grp.job", queuety.State{"i": 3}, queuety.OnQueue("grp"),
		queuety.ConcurrencyGroup("solo"), queuety.ConcurrencyLimit(1), queuety.CostUnits(3))
	require.NoError(t, err)
	phpRow, goRow := jobRow(t, c, ids.IDs[0]), jobRow(t, c, goID)
	for _, j := range []*driver.Job{phpRow, goRow} {
		assert.Equal(t, "solo", j.ConcurrencyGroup, "job %d concurrency_group", j.ID)
		assert.Equal(t, 1, j.ConcurrencyLimit, "job %d concurrency_limit", j.ID)
		assert.Equal(t, 3, j.CostUnits, "job %d cost_units", j.ID)
	}

	// Go holds the slot: PHP's worker claims the other jobs and unclaims them.
	release := make(chan struct{})
	holding := make(chan int64, 1)
	var ran atomic.Int64
	w := worker.New(c, worker.Queues("grp"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleJob("grp.job", func(ctx context.Context, _ queuety.Payload) error {
		if ran.Add(1) == 1 {
			info, _ := queuety.JobInfoFrom(ctx)
			holding <- info.JobID
			<-release
		}
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	held := <-holding
	var worked struct {
		Processed int `json:"processed"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
final class GroupJob implements \Queuety\Handler {
	public function handle( array $payload ): void {}
	public function config(): array { return array(); }
}
\Queuety\Queuety::register( 'grp.job', GroupJob::class );
echo json_encode( array( 'processed' => \Queuety\Queuety::flush_queue( 'grp' ) ) );`)), &worked))
	assert.Zero(t, worked.Processed, "jobs PHP ran while Go held the group's slot")
	for _, id := range append(ids.IDs, goID) {
		if id == held {
			continue
		}
		j := jobRow(t, c, id)
		assert.Equal(t, queuetytype.JobPending, j.Status, "job %d after PHP's unclaim", id)
		assert.Zero(t, j.Attempts, "job %d attempts after PHP's unclaim", id)
		assert.True(t, j.ReservedAt.IsZero(), "job %d reserved_at after PHP's unclaim", id)
	}
	stop() // stop claiming first: the freed slot must not start another job here
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), ran.Load(), "Go ran only the held job before stopping")

	// PHP holds the slot (a claim of its own): Go leaves the group alone.
	var claimed struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`echo json_encode( array( 'id' => \Queuety\Queuety::queue()->claim( 'grp' )->id ) );`)), &claimed))
	w2 := worker.New(c, worker.Queues("grp"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w2.HandleJob("grp.job", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	st, err := w2.RunOnce(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Zero(t, st.Claimed, "jobs Go claimed while PHP held the group's slot")
	php.eval(`\Queuety\Queuety::queue()->complete( ` + itoa(claimed.ID) + ` );`)
	st, err = w2.RunOnce(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Succeeded, "the last job, once PHP's completed")
	for _, id := range append(ids.IDs, goID) {
		j := jobRow(t, c, id)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "job %d", id)
	}
}

// TestLiveStepRateLimitFromPHP: a PHP step handler's config() rate_limit
// is stored in the step jobs Queuety PHP enqueues (__queuety_runtime), and
// a Go worker with no limit of its own adopts it.
func TestLiveStepRateLimitFromPHP(t *testing.T) {
	c, php := newLive(t)
	ctx := context.Background()
	php.eval(`
final class LimitedStep implements \Queuety\Step {
	public function handle( array $state ): array { return array(); }
	public function config(): array { return array( 'rate_limit' => array( 2, 60 ), 'concurrency_group' => 'geo', 'concurrency_limit' => 5, 'cost_units' => 4 ); }
}
for ( $i = 1; $i <= 4; $i++ ) {
	\Queuety\Queuety::workflow( 'geo_lookup' )->on_queue( 'geo' )->then( LimitedStep::class )->dispatch( array( 'i' => $i ) );
}`)
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: "geo"})
	require.NoError(t, err)
	require.Len(t, jobs, 4, "step jobs PHP enqueued")
	assert.Contains(t, string(jobs[0].Payload), `"rate_limit":[2,60]`, "runtime rate limit PHP stored")
	assert.Equal(t, "geo", jobs[0].ConcurrencyGroup, "concurrency_group PHP stored")
	assert.Equal(t, 4, jobs[0].CostUnits, "cost_units PHP stored")
	var ran atomic.Int64
	w := worker.New(c, worker.Queues("geo"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleStep("LimitedStep", func(context.Context, queuety.State) (queuety.State, error) { ran.Add(1); return nil, nil })
	st, err := w.RunOnce(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(2), ran.Load(), "steps Go ran under PHP's 2 per minute")
	assert.Equal(t, int64(2), st.Succeeded, "succeeded")
	pending, err := c.ListJobs(ctx, driver.JobFilter{Queue: "geo", Status: queuetytype.JobPending})
	require.NoError(t, err)
	assert.Len(t, pending, 2, "steps left for the next minute")
	for _, j := range pending {
		assert.Zero(t, j.Attempts, "job %d attempts", j.ID)
	}
}

func jobRow(t *testing.T, c *queuety.Client, id int64) *driver.Job {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}
