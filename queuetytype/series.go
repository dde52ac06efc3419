package queuetytype

import "time"

// Bounds of a SeriesQuery.
const (
	// MaxSeriesBuckets is the most buckets a SeriesQuery may ask for.
	MaxSeriesBuckets = 200
	// SeriesRowsDefault is how many log rows, and how many job rows, a
	// series reads at most when SeriesQuery.MaxRows is 0: the newest of
	// the span. A busier span is marked Truncated.
	SeriesRowsDefault = 50000
)

// SeriesQuery selects a time series of job activity (Client.MetricSeries):
// the span [Until-Span, Until) cut into Buckets equal buckets, optionally
// of one queue and one handler.
type SeriesQuery struct {
	// Until ends the span (exclusive); zero: now, rounded up to a whole
	// bucket.
	Until time.Time
	// Span is the length of the span; it must be positive and a whole
	// number of seconds per bucket.
	Span time.Duration
	// Buckets cuts the span into this many buckets, 1 to
	// MaxSeriesBuckets.
	Buckets int
	// Queue and Handler narrow the rows to one queue and one handler;
	// empty: all.
	Queue, Handler string
	// MaxRows bounds the log rows and the job rows read (each), newest
	// first; 0: SeriesRowsDefault.
	MaxRows int
}

// Series is a time series of job activity, read from the log rows
// (completions, failures, durations; the starts joined to their jobs
// for wait times).
type Series struct {
	// Since and Until are the span's ends; Step is a bucket's length.
	Since, Until time.Time
	Step         time.Duration
	// Buckets are the span's buckets, oldest first.
	Buckets []SeriesBucket
	// Truncated says the span had more rows than MaxRows: the counts of
	// its oldest buckets are floors.
	Truncated bool
}

// SeriesBucket is one bucket of a Series. Durations and waits are read
// from histograms with fixed class bounds, so a percentile is the upper
// bound of the class it falls in (at most the bucket's maximum).
type SeriesBucket struct {
	// Start is when the bucket begins.
	Start time.Time
	// Completed counts the 'completed' log rows; Failed the 'failed' and
	// 'buried' ones (attempts that failed).
	Completed, Failed int64
	// Durations counts the completed rows with a duration; MeanMS,
	// P50MS, P95MS and MaxMS describe those durations in milliseconds.
	Durations                   int64
	MeanMS, P50MS, P95MS, MaxMS float64
	// Waits counts the attempts that started in the bucket and are their
	// job's latest (a finished attempt's 'started' log row whose job row
	// is still there); WaitMeanS, WaitP95S and WaitMaxS describe how long
	// each job had been due when it started (start - available_at), in
	// seconds.
	Waits                         int64
	WaitMeanS, WaitP95S, WaitMaxS float64
}
