package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver case of the activity series reads.
func init() {
	registerDriver("Series/LogAndWaitRowsByBucketAndClass", testDriverSeries)
}

func testDriverSeries(t *testing.T, d *DriverEnv) {
	ms := func(n int64) *int64 { return &n }
	one, two := 1, 2
	bounds := []time.Time{Epoch, Epoch.Add(time.Minute), Epoch.Add(2 * time.Minute), Epoch.Add(3 * time.Minute)}
	ids := d.insertJobs(
		// waited 7s, started once
		&driver.Job{Queue: "mail", Handler: "send", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 1, MaxAttempts: 3,
			AvailableAt: Epoch.Add(-7 * time.Second), ReservedAt: Epoch.Add(5 * time.Second), CreatedAt: Epoch.Add(-7 * time.Second)},
		// retried: its second attempt waited 3s
		&driver.Job{Queue: "mail", Handler: "send", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 2, MaxAttempts: 3,
			AvailableAt: Epoch.Add(62 * time.Second), ReservedAt: Epoch.Add(65 * time.Second), CreatedAt: Epoch},
		// another queue, waited 0s
		&driver.Job{Queue: "img", Handler: "resize", Payload: []byte("{}"), Status: driver.JobCompleted, Attempts: 1, MaxAttempts: 3,
			AvailableAt: Epoch.Add(130 * time.Second), ReservedAt: Epoch.Add(130 * time.Second), CreatedAt: Epoch},
	)
	a, b, c := ids[0], ids[1], ids[2]
	log := func(job int64, q, h string, ev driver.LogEvent, attempt *int, dur *int64, at time.Duration) *driver.LogEntry {
		return &driver.LogEntry{JobID: &job, Handler: h, Queue: q, Event: ev, Attempt: attempt, DurationMS: dur, CreatedAt: Epoch.Add(at)}
	}
	d.Tx(func(tx driver.Tx) error {
		return tx.LogInsert(d.Ctx, []*driver.LogEntry{
			log(a, "mail", "send", driver.LogStarted, &one, nil, 0),
			log(a, "mail", "send", driver.LogCompleted, &one, ms(3), 0),
			log(b, "mail", "send", driver.LogStarted, &one, nil, 10*time.Second), // not the latest attempt
			log(b, "mail", "send", driver.LogFailed, &one, ms(40), 10*time.Second),
			log(b, "mail", "send", driver.LogStarted, &two, nil, 65*time.Second),
			log(b, "mail", "send", driver.LogCompleted, &two, ms(150), 65*time.Second),
			log(c, "img", "resize", driver.LogStarted, &one, nil, 130*time.Second),
			log(c, "img", "resize", driver.LogCompleted, &one, ms(1200), 130*time.Second),
			log(c, "img", "resize", driver.LogCompleted, &one, nil, 131*time.Second), // no duration
			log(c, "img", "resize", driver.LogBuried, &one, nil, 140*time.Second),
			log(c, "img", "resize", driver.LogCompleted, &one, ms(1), 3*time.Minute), // past the range
			log(c, "img", "resize", driver.LogCompleted, &one, ms(1), -time.Second),  // before it
		})
	})
	classes := []int64{10, 100, 1000}
	read := func(q driver.SeriesRowsQuery, waits bool) []driver.SeriesRow {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]driver.SeriesRow, error) {
			if waits {
				return tx.JobWaitSeriesRows(d.Ctx, q)
			}
			return tx.LogSeriesRows(d.Ctx, q)
		})
	}
	got := read(driver.SeriesRowsQuery{Bounds: bounds, Classes: classes, MaxRows: 100}, false)
	assert.Equal(t, []driver.SeriesRow{
		{Bucket: 0, Event: driver.LogCompleted, Class: 0, Count: 1, Sum: 3, Max: 3},
		{Bucket: 0, Event: driver.LogFailed, Class: 1, Count: 1, Sum: 40, Max: 40},
		{Bucket: 1, Event: driver.LogCompleted, Class: 2, Count: 1, Sum: 150, Max: 150},
		{Bucket: 2, Event: driver.LogCompleted, Class: -1, Count: 1, Sum: 0, Max: 0},
		{Bucket: 2, Event: driver.LogCompleted, Class: 3, Count: 1, Sum: 1200, Max: 1200},
		{Bucket: 2, Event: driver.LogBuried, Class: -1, Count: 1, Sum: 0, Max: 0},
	}, sortSeries(got), "log rows by bucket, event and class")

	got = read(driver.SeriesRowsQuery{Bounds: bounds, Classes: classes, Queue: "mail", Handler: "send", MaxRows: 100}, false)
	require.Len(t, got, 3, "queue and handler filter")
	got = read(driver.SeriesRowsQuery{Bounds: bounds, Classes: classes, Queue: "img", MaxRows: 2}, false)
	var n int64
	for _, r := range got {
		n += r.Count
		assert.Equal(t, 2, r.Bucket, "the newest rows are read first")
	}
	assert.Equal(t, int64(2), n, "MaxRows bounds the rows read")

	got = read(driver.SeriesRowsQuery{Bounds: bounds, Classes: []int64{1, 5, 10}, MaxRows: 100}, true)
	assert.Equal(t, []driver.SeriesRow{
		{Bucket: 0, Class: 2, Count: 1, Sum: 7, Max: 7},
		{Bucket: 1, Class: 1, Count: 1, Sum: 3, Max: 3},
		{Bucket: 2, Class: 0, Count: 1, Sum: 0, Max: 0},
	}, sortSeries(got), "waits of the latest attempts by bucket and class")
	got = read(driver.SeriesRowsQuery{Bounds: bounds[:2], Classes: []int64{1, 5, 10}, Queue: "mail", MaxRows: 100}, true)
	assert.Equal(t, []driver.SeriesRow{{Bucket: 0, Class: 2, Count: 1, Sum: 7, Max: 7}}, got, "one bucket, one queue")

	err := d.TxErr(func(tx driver.Tx) error {
		_, err := tx.LogSeriesRows(d.Ctx, driver.SeriesRowsQuery{Bounds: bounds, Classes: classes})
		return err
	})
	assert.Error(t, err, "a read without a row bound is refused")
}

// sortSeries orders rows by bucket, event and class (the stores' orders
// of event names may differ).
func sortSeries(rows []driver.SeriesRow) []driver.SeriesRow {
	out := append([]driver.SeriesRow(nil), rows...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && seriesLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func seriesLess(a, b driver.SeriesRow) bool {
	if a.Bucket != b.Bucket {
		return a.Bucket < b.Bucket
	}
	if a.Event != b.Event {
		return seriesEventRank(a.Event) < seriesEventRank(b.Event)
	}
	return a.Class < b.Class
}

func seriesEventRank(e driver.LogEvent) int {
	switch e {
	case driver.LogCompleted:
		return 0
	case driver.LogFailed:
		return 1
	}
	return 2
}
