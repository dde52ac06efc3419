package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Series/BucketsCountsPercentilesAndWaits", testMetricSeries)
}

// testMetricSeries checks MetricSeries on rows written as the engine
// writes them: counts per bucket, the percentiles read from the duration
// classes, the waits of each job's latest attempt, the queue filter, the
// row bound and the query's validation.
func testMetricSeries(t *testing.T, e *Env) {
	s := clientseam.StoreOf(e.C)
	at := func(sec int) time.Time { return Epoch.Add(time.Duration(sec) * time.Second) }
	one := 1
	var ids []int64
	jobs := []*driver.Job{
		{Queue: "mail", Handler: "send", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 1, MaxAttempts: 3, AvailableAt: at(0), CreatedAt: at(0)},
		{Queue: "mail", Handler: "send", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 1, MaxAttempts: 3, AvailableAt: at(0), CreatedAt: at(0)},
		{Queue: "img", Handler: "resize", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 1, MaxAttempts: 3, AvailableAt: at(61), CreatedAt: at(61)},
	}
	require.NoError(t, s.InTx(e.Ctx, func(tx driver.Tx) error { return tx.JobInsert(e.Ctx, jobs) }))
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	var logs []*driver.LogEntry
	add := func(job int64, q, h string, ev driver.LogEvent, sec int, dur int64) {
		l := &driver.LogEntry{JobID: &job, Queue: q, Handler: h, Event: ev, Attempt: &one, CreatedAt: at(sec)}
		if dur >= 0 {
			l.DurationMS = &dur
		}
		logs = append(logs, l)
	}
	// Bucket 0 (the first minute): ten completions of 3..300 ms.
	for i, d := range []int64{3, 3, 3, 3, 3, 40, 40, 40, 150, 300} {
		add(ids[i%2], "mail", "send", driver.LogCompleted, 5+i, d)
	}
	add(ids[0], "mail", "send", driver.LogStarted, 2, -1)  // waited 2 s
	add(ids[1], "mail", "send", driver.LogStarted, 12, -1) // waited 12 s
	// Bucket 1: a failure, a burial and a completion without duration
	// on queue img, which waited 0 s.
	add(ids[2], "img", "resize", driver.LogStarted, 61, -1)
	add(ids[2], "img", "resize", driver.LogFailed, 62, 10)
	add(ids[2], "img", "resize", driver.LogBuried, 63, -1)
	add(ids[2], "img", "resize", driver.LogCompleted, 64, -1)
	require.NoError(t, s.InTx(e.Ctx, func(tx driver.Tx) error { return tx.LogInsert(e.Ctx, logs) }))

	q := queuetytype.SeriesQuery{Until: at(180), Span: 3 * time.Minute, Buckets: 3}
	series, err := e.C.MetricSeries(e.Ctx, q)
	require.NoError(t, err)
	assert.Equal(t, at(0), series.Since)
	assert.Equal(t, time.Minute, series.Step)
	assert.False(t, series.Truncated)
	require.Len(t, series.Buckets, 3)
	b0, b1, b2 := series.Buckets[0], series.Buckets[1], series.Buckets[2]
	assert.Equal(t, at(60), b1.Start)
	assert.Equal(t, int64(10), b0.Completed)
	assert.Equal(t, int64(10), b0.Durations)
	assert.InDelta(t, 58.5, b0.MeanMS, 0.001, "mean of 3*5, 40*3, 150, 300")
	assert.Equal(t, 5.0, b0.P50MS, "the fifth of ten is 3 ms: the upper bound of its class [2, 5)")
	assert.Equal(t, 300.0, b0.P95MS, "the tenth is 300 ms: its class [200, 500) is capped at the maximum")
	assert.Equal(t, 300.0, b0.MaxMS)
	assert.Equal(t, int64(2), b0.Waits)
	assert.Equal(t, 7.0, b0.WaitMeanS)
	assert.Equal(t, 12.0, b0.WaitMaxS)
	assert.Equal(t, 12.0, b0.WaitP95S, "12 s is in [10, 30), capped at the maximum")
	assert.Equal(t, int64(1), b1.Completed)
	assert.Equal(t, int64(0), b1.Durations)
	assert.Equal(t, int64(2), b1.Failed, "failed and buried rows")
	assert.Equal(t, int64(1), b1.Waits)
	assert.Equal(t, 0.0, b1.WaitP95S)
	assert.Equal(t, queuetytype.SeriesBucket{Start: at(120)}, b2)

	q.Queue = "img"
	series, err = e.C.MetricSeries(e.Ctx, q)
	require.NoError(t, err)
	assert.Zero(t, series.Buckets[0].Completed, "queue filter")
	assert.Equal(t, int64(2), series.Buckets[1].Failed)

	q.Queue, q.MaxRows = "", 4
	series, err = e.C.MetricSeries(e.Ctx, q)
	require.NoError(t, err)
	assert.True(t, series.Truncated, "more rows than MaxRows")
	assert.Equal(t, int64(3), series.Buckets[1].Completed+series.Buckets[1].Failed, "the newest rows are counted")

	// Until zero: now, rounded up to a whole bucket (of the clock).
	e.Clock.Set(at(90))
	series, err = e.C.MetricSeries(e.Ctx, queuetytype.SeriesQuery{Span: 3 * time.Minute, Buckets: 3})
	require.NoError(t, err)
	assert.Equal(t, at(90).Truncate(time.Minute).Add(time.Minute), series.Until)

	for _, bad := range []queuetytype.SeriesQuery{
		{Span: time.Hour, Buckets: 0},
		{Span: time.Hour, Buckets: queuetytype.MaxSeriesBuckets + 1},
		{Span: 0, Buckets: 1},
		{Span: 90 * time.Second, Buckets: 60},
		{Span: time.Hour, Buckets: 7},
		{Span: time.Hour, Buckets: 6, MaxRows: -1},
	} {
		_, err := e.C.MetricSeries(e.Ctx, bad)
		assert.True(t, errors.Is(err, queuetytype.ErrInvalidArgument), "%+v: %v", bad, err)
	}
}
