package driver

import (
	"context"
	"time"
)

// SeriesTx holds the grouped reads behind a time series of job activity
// (queuety's MetricSeries): each reads at most MaxRows rows of an indexed
// time range, newest first, and returns them counted per bucket and class.
type SeriesTx interface {
	// LogSeriesRows counts the 'completed', 'failed' and 'buried' log rows
	// created in [Bounds[0], Bounds[len-1]), by bucket, event and duration
	// class, reading the newest MaxRows rows of the range through the
	// created_at index.
	LogSeriesRows(ctx context.Context, q SeriesRowsQuery) ([]SeriesRow, error)
	// JobWaitSeriesRows counts the attempts that started in [Bounds[0],
	// Bounds[len-1]) (their 'started' log row) and are their job's latest,
	// by bucket and wait class, where the wait is the seconds from the
	// job's available_at to the start; it reads the newest MaxRows
	// 'started' rows of the range through the created_at index, each
	// joined to its job by id. Event is empty.
	JobWaitSeriesRows(ctx context.Context, q SeriesRowsQuery) ([]SeriesRow, error)
}

// SeriesRowsQuery selects the rows a series counts.
type SeriesRowsQuery struct {
	// Bounds are the buckets' edges, ascending: bucket i holds the rows
	// at or after Bounds[i] and before Bounds[i+1]. Whole seconds.
	Bounds []time.Time
	// Classes are the upper bounds (exclusive) of the value classes, in
	// ascending order: milliseconds for durations, seconds for waits. A
	// value at or above the last is in class len(Classes).
	Classes []int64
	// Queue and Handler keep only rows of that queue and handler when set.
	Queue, Handler string
	// MaxRows bounds the rows read.
	MaxRows int
}

// SeriesRow is one group of a series read.
type SeriesRow struct {
	Bucket int      // the bucket, an index into the buckets
	Event  LogEvent // the log event (empty for waits)
	// Class is the value's class (an index into Classes, or len(Classes)),
	// -1 for rows without a value (a log row without duration_ms).
	Class int
	Count int64 // rows in the group
	// Sum and Max are the sum and the largest of the group's values.
	Sum, Max int64
}
