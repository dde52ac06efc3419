package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver case of the worker registry table.
func init() {
	registerDriver("Workers/SaveListDeletePrune", testDriverWorkers)
}

func testDriverWorkers(t *testing.T, d *DriverEnv) {
	started := Epoch.Add(123456 * time.Microsecond)
	a := &queuetytype.Worker{
		ID: "host-a-1-abc", Host: "host-a", PID: 1, Version: "v0.1.0", Queues: []string{"critical", "default"},
		Handlers: []string{"send_email"}, Concurrency: 4, Jobs: []int64{7, 9}, HeartbeatInterval: 3 * time.Second,
		StartedAt: started, LastHeartbeat: started,
	}
	b := &queuetytype.Worker{ID: "host-b-2-def", Host: "host-b", PID: 2, Version: "(devel)", Concurrency: 1,
		HeartbeatInterval: time.Second, StartedAt: started.Add(time.Second), LastHeartbeat: started.Add(time.Second)}
	list := func() []*queuetytype.Worker {
		var out []*queuetytype.Worker
		d.Tx(func(tx driver.Tx) (err error) { out, err = tx.WorkerList(d.Ctx); return err })
		return out
	}
	d.Tx(func(tx driver.Tx) error {
		if err := tx.WorkerSave(d.Ctx, a); err != nil {
			return err
		}
		return tx.WorkerSave(d.Ctx, b)
	})
	got := list()
	require.Len(t, got, 2)
	assert.Equal(t, a, got[0], "a worker reads back as saved, times to the microsecond")
	assert.Equal(t, []string{}, got[1].Queues, "nil lists read back empty")
	assert.Equal(t, []int64{}, got[1].Jobs)

	// A renewal updates every column but started_at.
	renewed := *a
	renewed.Jobs, renewed.Concurrency = nil, 8
	renewed.StartedAt = started.Add(time.Hour) // ignored
	renewed.LastHeartbeat = started.Add(2 * time.Minute)
	d.Tx(func(tx driver.Tx) error { return tx.WorkerSave(d.Ctx, &renewed) })
	got = list()
	require.Len(t, got, 2)
	assert.Equal(t, started, got[0].StartedAt, "started_at is kept")
	assert.Equal(t, renewed.LastHeartbeat, got[0].LastHeartbeat)
	assert.Equal(t, 8, got[0].Concurrency)
	assert.Empty(t, got[0].Jobs)

	// Prune removes the rows last renewed before the cutoff, up to the limit.
	var n int64
	d.Tx(func(tx driver.Tx) (err error) {
		n, err = tx.WorkerPrune(d.Ctx, started.Add(time.Minute), 10)
		return err
	})
	assert.Equal(t, int64(1), n, "only b was renewed before the cutoff")
	got = list()
	require.Len(t, got, 1)
	assert.Equal(t, a.ID, got[0].ID)
	d.Tx(func(tx driver.Tx) (err error) { n, err = tx.WorkerPrune(d.Ctx, started.Add(time.Hour), 0); return err })
	assert.Zero(t, n, "limit 0 removes nothing")

	var found bool
	d.Tx(func(tx driver.Tx) (err error) { found, err = tx.WorkerDelete(d.Ctx, a.ID); return err })
	assert.True(t, found)
	d.Tx(func(tx driver.Tx) (err error) { found, err = tx.WorkerDelete(d.Ctx, a.ID); return err })
	assert.False(t, found, "a second delete finds nothing")
	assert.Empty(t, list())
}
