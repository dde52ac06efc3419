package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// notes records what the dispatches' NoteJobs notes held when their wake
// function was called, and the dependencies the notes heard of.
type notes struct {
	wakes   []map[jobnote.Key]int
	depends []int64
}

func (n *notes) noteJobs(ctx context.Context) (context.Context, func()) {
	ctx, note := jobnote.With(ctx)
	note.OnDependsOn(func(id int64) { n.depends = append(n.depends, id) })
	return ctx, func() {
		counts, _ := note.Take()
		n.wakes = append(n.wakes, counts)
	}
}

// notedService returns a migrated store of the test's own and a dispatch
// service on it (batches included) whose job notes are recorded in n.
func notedService(t *testing.T) (driver.Store, *Service, *notes) {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	n := &notes{}
	return s, New(s, Config{Clock: fixedClock(now), NoteJobs: n.noteJobs, Batches: batch.New(s, batch.Config{Clock: fixedClock(now)})}), n
}

// A batch and a chain are each written in one note and wake once, after
// their commit, for all their jobs; the note hears of every job one of
// them depends on.
func TestBatchAndChainWakeOnceThroughTheirNote(t *testing.T) {
	ctx := context.Background()
	_, svc, n := notedService(t)

	first, err := svc.DispatchMany(ctx, []JobRequest{{Handler: "first"}})
	require.NoError(t, err)
	*n = notes{}

	_, _, err = svc.DispatchBatch(ctx, batch.Spec{Queue: "q"}, []JobRequest{
		{Handler: "b", Spec: queuetytype.JobSpec{DependsOn: first[0]}}, {Handler: "b"}})
	require.NoError(t, err)
	assert.Equal(t, []map[jobnote.Key]int{{{Queue: "q", Handler: "b"}: 2}}, n.wakes, "the batch wakes once, for its two jobs")
	assert.Equal(t, []int64{first[0]}, n.depends, "the note hears of the job a batch job depends on")
	*n = notes{}

	ids, err := svc.DispatchChain(ctx, "q", "", []JobRequest{{Handler: "c1", Spec: queuetytype.JobSpec{DependsOn: first[0]}}, {Handler: "c2"}, {Handler: "c3"}})
	require.NoError(t, err)
	assert.Equal(t, []map[jobnote.Key]int{{{Queue: "q", Handler: "c1"}: 1, {Queue: "q", Handler: "c2"}: 1, {Queue: "q", Handler: "c3"}: 1}},
		n.wakes, "the chain wakes once, for its three jobs")
	assert.Equal(t, []int64{first[0], ids[0], ids[1]}, n.depends, "the note hears of the job each chain job depends on")
}

// Jobs dispatched inside the caller's own transaction (DispatchIn,
// DispatchManyIn) tell a note of the jobs they depend on, before the
// caller commits, so the dependency's completion knows it has
// dependents; they wake no one, the commit being the caller's.
func TestDispatchInHearsDependencies(t *testing.T) {
	ctx := context.Background()
	s, svc, n := notedService(t)

	first, err := svc.DispatchMany(ctx, []JobRequest{{Handler: "first"}, {Handler: "second"}})
	require.NoError(t, err)
	*n = notes{}

	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		if _, err := svc.DispatchIn(ctx, tx, "after-first", nil, queuetytype.JobSpec{DependsOn: first[0]}); err != nil {
			return err
		}
		_, err := svc.DispatchManyIn(ctx, tx, []JobRequest{{Handler: "plain"}, {Handler: "after-second", Spec: queuetytype.JobSpec{DependsOn: first[1]}}})
		return err
	}))
	assert.Equal(t, []int64{first[0], first[1]}, n.depends, "the note hears of the jobs the jobs depend on")
	assert.Empty(t, n.wakes, "wake-ups for jobs of the caller's transaction")
}
