package queuety

import (
	"context"
	"math"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The class bounds of the series histograms: durations in milliseconds,
// waits in seconds (exclusive upper bounds; a last class holds the rest).
var (
	durationClasses = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 300000}
	waitClasses     = []int64{1, 2, 5, 10, 30, 60, 300, 900, 3600, 21600}
)

// MetricSeries reads a time series of job activity over q's span: per
// bucket, the completed and failed attempts and the handlers' durations
// (from the log rows), and how long the jobs claimed waited since they
// were due (from the job rows). It runs two grouped reads, each over at
// most q.MaxRows rows of an indexed time range, so its cost is bounded
// however busy the span; Series.Truncated says when rows were left out.
// Percentiles are read from fixed histogram classes (1, 2, 5, 10, ... ms;
// 1, 2, 5, 10, 30 s, ...) and are the class's upper bound, at most the
// bucket's maximum. It returns ErrInvalidArgument for a bad query.
func (c *Client) MetricSeries(ctx context.Context, q queuetytype.SeriesQuery) (*queuetytype.Series, error) {
	if q.Buckets < 1 || q.Buckets > queuetytype.MaxSeriesBuckets {
		return nil, invalidf("series buckets must be from 1 to %d, got %d", queuetytype.MaxSeriesBuckets, q.Buckets)
	}
	step := q.Span / time.Duration(q.Buckets)
	if q.Span <= 0 || step < time.Second || step%time.Second != 0 || step*time.Duration(q.Buckets) != q.Span {
		return nil, invalidf("series span %s must be positive and a whole number of seconds per bucket (%d buckets)", q.Span, q.Buckets)
	}
	if q.MaxRows < 0 {
		return nil, invalidf("series MaxRows must not be negative, got %d", q.MaxRows)
	}
	if q.MaxRows == 0 {
		q.MaxRows = queuetytype.SeriesRowsDefault
	}
	until := q.Until.UTC().Truncate(time.Second)
	if q.Until.IsZero() {
		now := c.engine.Clock().Now().UTC()
		until = now.Truncate(step)
		if until.Before(now) {
			until = until.Add(step)
		}
	}
	s := &queuetytype.Series{Since: until.Add(-q.Span), Until: until, Step: step, Buckets: make([]queuetytype.SeriesBucket, q.Buckets)}
	bounds := make([]time.Time, q.Buckets+1)
	for i := range bounds {
		bounds[i] = s.Since.Add(time.Duration(i) * step)
		if i < q.Buckets {
			s.Buckets[i].Start = bounds[i]
		}
	}
	var logs, waits []driver.SeriesRow
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) {
		rq := driver.SeriesRowsQuery{Bounds: bounds, Classes: durationClasses, Queue: q.Queue, Handler: q.Handler, MaxRows: q.MaxRows}
		if logs, err = tx.LogSeriesRows(ctx, rq); err != nil {
			return err
		}
		rq.Classes = waitClasses
		waits, err = tx.JobWaitSeriesRows(ctx, rq)
		return err
	})
	if err != nil {
		return nil, wrap("metric series", err)
	}
	s.Truncated = seriesFill(s.Buckets, logs, waits, q.MaxRows)
	return s, nil
}

// seriesFill sums the grouped rows into the buckets and reports whether
// either read hit maxRows.
func seriesFill(buckets []queuetytype.SeriesBucket, logs, waits []driver.SeriesRow, maxRows int) bool {
	n := len(buckets)
	durHist := make([][]int64, n)
	durMax := make([]int64, n)
	var logRows, waitRows int64
	sums := make([][2]int64, n) // duration sum, wait sum
	for _, r := range logs {
		logRows += r.Count
		if r.Bucket < 0 || r.Bucket >= n {
			continue
		}
		b := &buckets[r.Bucket]
		switch r.Event {
		case driver.LogCompleted:
			b.Completed += r.Count
			if r.Class < 0 {
				continue
			}
			if durHist[r.Bucket] == nil {
				durHist[r.Bucket] = make([]int64, len(durationClasses)+1)
			}
			durHist[r.Bucket][r.Class] += r.Count
			b.Durations += r.Count
			sums[r.Bucket][0] += r.Sum
			durMax[r.Bucket] = max(durMax[r.Bucket], r.Max)
		case driver.LogFailed, driver.LogBuried:
			b.Failed += r.Count
		}
	}
	waitHist := make([][]int64, n)
	waitMax := make([]int64, n)
	for _, r := range waits {
		waitRows += r.Count
		if r.Bucket < 0 || r.Bucket >= n || r.Class < 0 {
			continue
		}
		if waitHist[r.Bucket] == nil {
			waitHist[r.Bucket] = make([]int64, len(waitClasses)+1)
		}
		waitHist[r.Bucket][r.Class] += r.Count
		buckets[r.Bucket].Waits += r.Count
		sums[r.Bucket][1] += r.Sum
		waitMax[r.Bucket] = max(waitMax[r.Bucket], r.Max)
	}
	for i := range buckets {
		b := &buckets[i]
		if b.Durations > 0 {
			b.MeanMS = round2(float64(sums[i][0]) / float64(b.Durations))
			b.MaxMS = float64(durMax[i])
			b.P50MS = histPercentile(durHist[i], durationClasses, 0.50, durMax[i])
			b.P95MS = histPercentile(durHist[i], durationClasses, 0.95, durMax[i])
		}
		if b.Waits > 0 {
			b.WaitMeanS = round2(float64(sums[i][1]) / float64(b.Waits))
			b.WaitMaxS = float64(max(waitMax[i], 0))
			b.WaitP95S = histPercentile(waitHist[i], waitClasses, 0.95, max(waitMax[i], 0))
		}
	}
	return logRows >= int64(maxRows) || waitRows >= int64(maxRows)
}

// histPercentile is the p-th percentile (nearest rank) of a histogram:
// the upper bound of the class the rank falls in, at most top.
func histPercentile(hist, classes []int64, p float64, top int64) float64 {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(p*float64(total))), 1)
	var seen int64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			if i < len(classes) {
				return float64(min(classes[i], top))
			}
			return float64(top)
		}
	}
	return float64(top)
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
