package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2031, 4, 5, 6, 7, 8, 0, time.UTC)

// open returns a store on freshly migrated tables of the test server.
func open(t *testing.T) driver.Store {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// job returns a pending job row for handler on queue q.
func job(handler, q string, payload string) *driver.Job {
	return &driver.Job{Queue: q, Handler: handler, Payload: []byte(payload), Status: driver.JobPending, MaxAttempts: 3,
		AvailableAt: now, CostUnits: 1, CreatedAt: now}
}

// inTx runs f in one transaction of s.
func inTx(t *testing.T, s driver.Store, f func(tx driver.Tx) error) {
	t.Helper()
	require.NoError(t, s.InTx(context.Background(), f))
}

// TestBatchTransitions: a batch of three jobs counts a completion and a
// burial down; the burial fires catch once, the last completion fires
// finally (not then: a job failed); each callback job goes to the queue
// KnownCallback names, or to the firing job's queue; a cancel of a
// finished batch still fires finally once.
func TestBatchTransitions(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	svc := batch.New(s, batch.Config{Clock: fixedClock{now},
		KnownCallback: func(name string) (string, bool) { return "cbq", name == "onCatch" || name == "onThen" }})

	jobs := []*driver.Job{job("a", "q", "{}"), job("b", "q", "{}"), job("c", "q", "{}")}
	id, err := svc.Insert(ctx, batch.Spec{Name: "nightly", Catch: "onCatch", Finally: "onFinally", Then: "onThen"}, jobs)
	require.NoError(t, err)
	for _, j := range jobs {
		assert.Equal(t, id, j.BatchID)
		assert.NotZero(t, j.ID)
	}

	inTx(t, s, func(tx driver.Tx) error { return svc.JobsCompleted(ctx, tx, jobs[:1], now) })
	inTx(t, s, func(tx driver.Tx) error { return svc.JobBuried(ctx, tx, jobs[1], phpjson.NewObject(), "boom", now) })
	inTx(t, s, func(tx driver.Tx) error { return svc.JobBuried(ctx, tx, jobs[1], phpjson.NewObject(), "boom", now) })
	inTx(t, s, func(tx driver.Tx) error { return svc.JobsCompleted(ctx, tx, jobs[2:], now) })

	var b *driver.Batch
	var events []*driver.BatchEvent
	read := func() {
		inTx(t, s, func(tx driver.Tx) (err error) {
			if b, err = tx.BatchGet(ctx, id, driver.LockNone); err != nil {
				return err
			}
			events, err = tx.BatchEventList(ctx, []int64{id})
			return err
		})
	}
	read()
	assert.Equal(t, 0, b.PendingJobs)
	assert.Equal(t, 1, b.FailedJobs, "a job buried twice counts once")
	assert.Equal(t, now, b.FinishedAt)
	got := map[string]*driver.BatchEvent{}
	for _, ev := range events {
		got[ev.Event] = ev
	}
	require.Contains(t, got, batch.BatchEventCatch)
	require.Contains(t, got, batch.BatchEventFinally)
	assert.NotContains(t, got, batch.BatchEventThen, "a failed batch without allow_failures fires no then")

	var cbs []*driver.Job
	inTx(t, s, func(tx driver.Tx) (err error) {
		cbs, err = tx.JobGetMany(ctx, []int64{got[batch.BatchEventCatch].JobID, got[batch.BatchEventFinally].JobID}, driver.LockNone)
		return err
	})
	queues := map[string]string{}
	for _, j := range cbs {
		queues[j.Handler] = j.Queue
	}
	assert.Equal(t, map[string]string{"onCatch": "cbq", "onFinally": "q"}, queues, "known callbacks go to their worker's queue")

	done, err := svc.Cancel(ctx, id)
	require.NoError(t, err)
	assert.True(t, done)
	done, err = svc.Cancel(ctx, id)
	require.NoError(t, err)
	assert.False(t, done, "cancelled once")
	read()
	assert.Len(t, events, 3, "catch, finally and cancel, each once")
	_, err = svc.Cancel(ctx, 999999)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)

	o := batch.Object(b)
	name, _ := o.Get("name")
	assert.Equal(t, "nightly", name)

	_, err = svc.Insert(ctx, batch.Spec{}, nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "a batch needs a job")
}

// TestChain: a chain's jobs each depend on the one before; burying one
// with a catch handler enqueues it once for Queuety PHP's bridge class
// when no worker of this process has it and a bridge queue is set.
func TestChain(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rt := phpjson.NewObject()
	rt.Set("max_attempts", int64(3))
	svc := batch.New(s, batch.Config{Clock: fixedClock{now}, PHPCallbacks: "php",
		BridgeRuntime: func() *phpjson.Object { return rt }})

	payload := `{"n":1,"` + batch.ChainKey + `":"Catcher"}`
	jobs := []*driver.Job{job("a", "q", payload), job("b", "q", payload)}
	ids, err := svc.InsertChain(ctx, jobs)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	assert.Zero(t, jobs[0].DependsOn)
	assert.Equal(t, ids[0], jobs[1].DependsOn, "the second waits for the first")

	doc, err := phpjson.DecodeObject([]byte(payload))
	require.NoError(t, err)
	inTx(t, s, func(tx driver.Tx) error { return svc.JobBuried(ctx, tx, jobs[0], doc, "boom", now) })
	var next int64
	inTx(t, s, func(tx driver.Tx) error {
		rows, err := tx.JobGetMany(ctx, []int64{ids[1] + 1}, driver.LockNone)
		if err != nil || len(rows) == 0 {
			return err
		}
		j := rows[0]
		next = j.ID
		assert.Equal(t, batch.HandlerPHPCallback, j.Handler)
		assert.Equal(t, "php", j.Queue)
		o, err := phpjson.DecodeObject(j.Payload)
		require.NoError(t, err)
		c, _ := o.Get("chain_catch")
		assert.Equal(t, "Catcher", c)
		r, _ := o.Get(batch.RuntimeKey)
		assert.NotNil(t, r, "the bridge job carries its runtime options")
		return nil
	})
	assert.NotZero(t, next, "the catch handler's job was enqueued")

	_, err = svc.InsertChain(ctx, nil)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
}

// TestSettleForeignLeavesUnknownCallbacks: a batch another engine
// finished, whose callback no worker of this process has, is left to
// others for the handoff period and skipped by the sweep meanwhile.
func TestSettleForeignLeavesUnknownCallbacks(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	svc := batch.New(s, batch.Config{Clock: fixedClock{now}, Handoff: time.Minute})
	jobs := []*driver.Job{job("a", "q", "{}")}
	id, err := svc.Insert(ctx, batch.Spec{Finally: "Elsewhere"}, jobs)
	require.NoError(t, err)
	inTx(t, s, func(tx driver.Tx) error {
		b, err := tx.BatchGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		b.PendingJobs, b.FinishedAt = 0, now // finished by another engine
		if err := tx.BatchUpdate(ctx, b); err != nil {
			return err
		}
		n, err := svc.SettleForeign(ctx, tx, b, now)
		assert.Zero(t, n, "no callback of this process")
		return err
	})
	assert.Equal(t, []int64{id}, svc.Skips(now.Add(30*time.Second)))
	assert.Empty(t, svc.Skips(now.Add(time.Minute)), "the handoff period is over")
}
