package sqlstore

// This file holds the grouped reads of activity series: log rows and
// claimed jobs counted per time bucket and value class.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/store/driver"
)

// LogSeriesRows implements driver.Tx.
func (t *txn) LogSeriesRows(ctx context.Context, q driver.SeriesRowsQuery) ([]driver.SeriesRow, error) {
	if err := checkSeriesQuery(q); err != nil {
		return nil, err
	}
	bucket, bargs := t.seriesBucket("r.created_at", q)
	class, cargs := seriesClass("r.duration_ms", q.Classes, true)
	inner, iargs := t.seriesRange("SELECT created_at, event, duration_ms FROM "+t.s.T.Logs+t.logsByTime()+
		" WHERE created_at >= ? AND created_at < ? AND event IN ('completed','failed','buried')", "", q)
	stmt := "SELECT " + bucket + " AS b, r.event, " + class + " AS c, COUNT(*), COALESCE(SUM(r.duration_ms), 0), " +
		"COALESCE(MAX(r.duration_ms), 0) FROM (" + inner + ") r GROUP BY b, r.event, c ORDER BY b, r.event, c"
	args := append(append(bargs, cargs...), iargs...)
	rows, err := queryAll(ctx, t.tx, scanSeriesRow(true), stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("log series rows: %w", err)
	}
	return rows, nil
}

// JobWaitSeriesRows implements driver.Tx.
func (t *txn) JobWaitSeriesRows(ctx context.Context, q driver.SeriesRowsQuery) ([]driver.SeriesRow, error) {
	if err := checkSeriesQuery(q); err != nil {
		return nil, err
	}
	bucket, bargs := t.seriesBucket("r.ts", q)
	class, cargs := seriesClass("r.w", q.Classes, false)
	l, j := t.s.T.Logs, t.s.T.Jobs
	inner, iargs := t.seriesRange("SELECT l.created_at AS ts, "+t.s.D.SecondsBetween("j.available_at", "l.created_at")+" AS w FROM "+l+
		" l"+t.logsByTime()+" JOIN "+j+" j ON j.id = l.job_id WHERE l.created_at >= ? AND l.created_at < ? AND l.event = 'started' AND l.attempt = j.attempts",
		"l.", q)
	stmt := "SELECT " + bucket + " AS b, " + class + " AS c, COUNT(*), COALESCE(SUM(CASE WHEN r.w > 0 THEN r.w ELSE 0 END), 0), " +
		"COALESCE(MAX(r.w), 0) FROM (" + inner + ") r GROUP BY b, c ORDER BY b, c"
	args := append(append(bargs, cargs...), iargs...)
	rows, err := queryAll(ctx, t.tx, scanSeriesRow(false), stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("job wait series rows: %w", err)
	}
	return rows, nil
}

// logsByTime is the dialect's index hint for reading log rows by time.
func (t *txn) logsByTime() string {
	return strings.ReplaceAll(t.s.D.LogsByTime, "{logs}", t.s.T.Logs)
}

// checkSeriesQuery refuses a query without buckets or a row bound.
func checkSeriesQuery(q driver.SeriesRowsQuery) error {
	if len(q.Bounds) < 2 || q.MaxRows <= 0 {
		return errors.New("series rows: want at least two bounds and a positive MaxRows")
	}
	return nil
}

// seriesRange completes the inner read of a series: the time range, the
// queue and handler filters, and the newest MaxRows rows by created_at,
// of the log table's alias (with its dot) or "".
func (t *txn) seriesRange(head, alias string, q driver.SeriesRowsQuery) (string, []any) {
	args := []any{t.sec(q.Bounds[0]), t.sec(q.Bounds[len(q.Bounds)-1])}
	var b strings.Builder
	b.WriteString(head)
	if q.Queue != "" {
		b.WriteString(" AND " + alias + "queue = ?")
		args = append(args, q.Queue)
	}
	if q.Handler != "" {
		b.WriteString(" AND " + alias + "handler = ?")
		args = append(args, q.Handler)
	}
	b.WriteString(" ORDER BY " + alias + "created_at DESC LIMIT ?")
	return b.String(), append(args, q.MaxRows)
}

// seriesBucket is the CASE expression of a row's bucket by the inner
// bounds (the outer ones are the range's).
func (t *txn) seriesBucket(col string, q driver.SeriesRowsQuery) (string, []any) {
	n := len(q.Bounds) - 1
	if n == 1 {
		return "0", nil
	}
	var b strings.Builder
	args := make([]any, 0, n-1)
	b.WriteString("CASE")
	for i := 1; i < n; i++ {
		b.WriteString(" WHEN " + col + " < ? THEN " + fmt.Sprint(i-1))
		args = append(args, t.sec(q.Bounds[i]))
	}
	b.WriteString(" ELSE " + fmt.Sprint(n-1) + " END")
	return b.String(), args
}

// seriesClass is the CASE expression of a value's class; nullable values
// that are NULL get -1.
func seriesClass(col string, classes []int64, nullable bool) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(classes))
	b.WriteString("CASE")
	if nullable {
		b.WriteString(" WHEN " + col + " IS NULL THEN -1")
	}
	for i, c := range classes {
		b.WriteString(" WHEN " + col + " < ? THEN " + fmt.Sprint(i))
		args = append(args, c)
	}
	b.WriteString(" ELSE " + fmt.Sprint(len(classes)) + " END")
	return b.String(), args
}

// scanSeriesRow scans a grouped row, with an event column when events.
func scanSeriesRow(events bool) func(scanner) (driver.SeriesRow, error) {
	return func(sc scanner) (driver.SeriesRow, error) {
		var r driver.SeriesRow
		var event sql.NullString
		dest := []any{&r.Bucket}
		if events {
			dest = append(dest, &event)
		}
		dest = append(dest, &r.Class, &r.Count, &r.Sum, &r.Max)
		if err := sc.Scan(dest...); err != nil {
			return r, err
		}
		r.Event = driver.LogEvent(event.String)
		return r, nil
	}
}
