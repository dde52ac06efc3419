package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

const scheduleCols = "id, handler, payload, queue, expression, expression_type, last_run, next_run, overlap_policy, enabled, created_at, " +
	"workflow_definition, catch_up, last_run_ref, pending_run"

func scanSchedule(sc scanner) (*driver.Schedule, error) {
	s := &driver.Schedule{}
	var typ, overlap, catchUp string
	var enabled int
	err := sc.Scan(&s.ID, &s.Handler, nullBytes{&s.Payload}, &s.Queue, &s.Expression, &typ, nullTime{&s.LastRun}, nullTime{&s.NextRun},
		&overlap, &enabled, nullTime{&s.CreatedAt}, nullBytes{&s.Workflow}, nullString{&catchUp}, nullInt{&s.LastRunRef}, nullTime{&s.PendingRun})
	if err != nil {
		return nil, fmt.Errorf("scan schedule: %w", err)
	}
	s.ExpressionType, s.Overlap, s.CatchUp, s.Enabled = driver.ScheduleType(typ), driver.OverlapPolicy(overlap), driver.CatchUpPolicy(catchUp), enabled != 0
	return s, nil
}

func (t *txn) querySchedules(ctx context.Context, q string, args ...any) ([]*driver.Schedule, error) {
	return queryAll(ctx, t.tx, scanSchedule, q, args...)
}

// ScheduleSave implements driver.Tx.
func (t *txn) ScheduleSave(ctx context.Context, s *driver.Schedule) error {
	if s.ID != 0 {
		q := "UPDATE " + t.s.T.Schedules + " SET handler = ?, payload = ?, queue = ?, expression = ?, expression_type = ?, last_run = ?, " +
			"next_run = ?, overlap_policy = ?, enabled = ?, workflow_definition = ?, catch_up = ?, last_run_ref = ?, pending_run = ? WHERE id = ?"
		_, err := t.tx.ExecContext(ctx, q, s.Handler, string(s.Payload), s.Queue, s.Expression, string(s.ExpressionType), t.sec(s.LastRun),
			t.sec(s.NextRun), string(s.Overlap), boolInt(s.Enabled), nullText(s.Workflow), nullStr(string(s.CatchUp)), nullID(s.LastRunRef),
			t.frac(s.PendingRun), s.ID)
		if err != nil {
			return fmt.Errorf("update schedule %d: %w", s.ID, err)
		}
		return nil
	}
	q := "INSERT INTO " + t.s.T.Schedules + " (handler, payload, queue, expression, expression_type, last_run, next_run, overlap_policy, enabled, " +
		"created_at, workflow_definition, catch_up, last_run_ref, pending_run) VALUES (" + placeholders(14) + ")"
	var ids []int64
	err := t.mayConflict(ctx, func() (err error) {
		ids, err = t.insert(ctx, q, 1, s.Handler, string(s.Payload), s.Queue, s.Expression, string(s.ExpressionType), t.sec(s.LastRun),
			t.sec(s.NextRun), string(s.Overlap), boolInt(s.Enabled), t.sec(s.CreatedAt), nullText(s.Workflow), nullStr(string(s.CatchUp)),
			nullID(s.LastRunRef), t.frac(s.PendingRun))
		return err
	})
	if err != nil {
		if t.s.D.Duplicate(err) {
			return fmt.Errorf("schedule for handler %q: %w", s.Handler, driver.ErrDuplicate)
		}
		return fmt.Errorf("insert schedule: %w", err)
	}
	s.ID = ids[0]
	return nil
}

// ScheduleGet implements driver.Tx.
func (t *txn) ScheduleGet(ctx context.Context, id int64, lock driver.LockMode) (*driver.Schedule, error) {
	return queryOne(ctx, t.tx, scanSchedule, "schedule", id, "SELECT "+scheduleCols+" FROM "+t.s.T.Schedules+" WHERE id = ?"+t.lock(lock))
}

// ScheduleByHandler implements driver.Tx.
func (t *txn) ScheduleByHandler(ctx context.Context, handler string, lock driver.LockMode) (*driver.Schedule, error) {
	s, err := scanSchedule(t.tx.QueryRowContext(ctx, "SELECT "+scheduleCols+" FROM "+t.s.T.Schedules+" WHERE handler = ?"+t.lock(lock), handler))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("schedule %q: %w", handler, driver.ErrNotFound)
	}
	return s, err
}

// ScheduleList implements driver.Tx.
func (t *txn) ScheduleList(ctx context.Context) ([]*driver.Schedule, error) {
	return t.querySchedules(ctx, "SELECT "+scheduleCols+" FROM "+t.s.T.Schedules+" ORDER BY id")
}

// ScheduleDelete implements driver.Tx.
func (t *txn) ScheduleDelete(ctx context.Context, id int64) error {
	_, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Schedules+" WHERE id = ?", id)
	return err
}

// ScheduleFindDue implements driver.Tx: due next runs through
// idx_next_run (enabled, next_run), then due buffered firings through
// idx_go_pending_run, both locking what they return.
func (t *txn) ScheduleFindDue(ctx context.Context, p driver.ExpiredParams) ([]*driver.Schedule, error) {
	due, err := t.querySchedules(ctx, t.s.SQL.DueSchedules+t.lock(p.Lock), t.sec(p.Now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("find due schedules: %w", err)
	}
	if len(due) >= p.Limit {
		return due, nil
	}
	pending, err := t.querySchedules(ctx, t.s.SQL.BufferedSchedules+t.lock(p.Lock), t.frac(p.Now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("find buffered schedules: %w", err)
	}
	return mergeByID(due, pending, func(s *driver.Schedule) int64 { return s.ID }, p.Limit), nil
}

// ScheduleUpdate implements driver.Tx.
func (t *txn) ScheduleUpdate(ctx context.Context, s *driver.Schedule, oldNext time.Time) (bool, error) {
	q := "UPDATE " + t.s.T.Schedules + " SET last_run = ?, next_run = ?, enabled = ?, last_run_ref = ?, pending_run = ? WHERE id = ? AND next_run = ?"
	res, err := t.tx.ExecContext(ctx, q, t.sec(s.LastRun), t.sec(s.NextRun), boolInt(s.Enabled), nullID(s.LastRunRef), t.frac(s.PendingRun),
		s.ID, t.sec(oldNext))
	if err != nil {
		return false, fmt.Errorf("update schedule %d: %w", s.ID, err)
	}
	n, err := res.RowsAffected() // matched rows: see Dialect
	if err != nil {
		return false, fmt.Errorf("update schedule %d: %w", s.ID, err)
	}
	return n > 0, nil
}

// nextRunSQL selects the earliest next run of the enabled schedules.
func nextRunSQL(t Tables) string {
	return "SELECT MIN(next_run) FROM " + t.Schedules + " WHERE enabled = 1"
}

// ScheduleNextDue implements driver.Tx: the earliest next run, the first
// entry of idx_next_run (enabled, next_run). Buffered firings are left
// out: a firing is buffered at a slot that has already passed and waits
// for the schedule's previous run to end, which no stored time predicts,
// so counting it would make a waiting worker tick continuously until then.
func (t *txn) ScheduleNextDue(ctx context.Context) (time.Time, error) {
	var next time.Time
	err := t.tx.QueryRowContext(ctx, nextRunSQL(t.s.T)).Scan(nullTime{&next})
	if err != nil {
		return time.Time{}, fmt.Errorf("next schedule due: %w", err)
	}
	return next, nil
}
