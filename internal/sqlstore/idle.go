package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// The reads of driver.IdleReader: each one statement on the pool, outside
// a transaction, each through an index.

// JobNextDue implements driver.IdleReader: the first entry of
// idx_queue_status_available (queue, status, available_at) that a claim
// could take once due (the claim's conditions but the due time).
func (s *Store) JobNextDue(ctx context.Context, p driver.ClaimParams) (time.Time, bool, error) {
	if len(p.Handlers) == 0 {
		return time.Time{}, false, nil
	}
	q := "SELECT job.available_at FROM " + s.T.Jobs + " job WHERE job.queue = ? AND job.status = 'pending'" +
		" AND job.handler IN (" + placeholders(len(p.Handlers)) + ")" + claimBlockers(s.T) +
		" ORDER BY job.available_at LIMIT 1"
	args := []any{p.Queue}
	for _, h := range p.Handlers {
		args = append(args, h)
	}
	args = append(args, p.Queue)
	var at time.Time
	err := s.DB.QueryRowContext(ctx, q, args...).Scan(nullTime{&at})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due job: %w", err)
	}
	return at, !at.IsZero(), nil
}

// ScheduleNextDueRead implements driver.IdleReader.
func (s *Store) ScheduleNextDueRead(ctx context.Context) (time.Time, bool, error) {
	var next time.Time
	var buffered sql.NullInt64
	err := s.DB.QueryRowContext(ctx, "SELECT ("+nextRunSQL(s.T)+"),"+
		" (SELECT 1 FROM "+s.T.Schedules+" WHERE enabled = 1 AND pending_run IS NOT NULL LIMIT 1)").Scan(nullTime{&next}, &buffered)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next schedule due: %w", err)
	}
	return next, buffered.Valid, nil
}

// MaintenanceDue implements driver.IdleReader: each value is the first
// entry of an index (idx_reserved (status, reserved_at), the activity
// deadline columns' own indexes, (status, wait_deadline_at), the machine
// timers' fire_at).
func (s *Store) MaintenanceDue(ctx context.Context) (driver.MaintenanceDue, error) {
	var d driver.MaintenanceDue
	var unreserved sql.NullInt64
	var acts [4]time.Time
	q := "SELECT (SELECT 1 FROM " + s.T.Jobs + " WHERE status = 'processing' AND reserved_at IS NULL LIMIT 1)," +
		" (SELECT MIN(reserved_at) FROM " + s.T.Jobs + " WHERE status = 'processing')," +
		" (SELECT MIN(schedule_to_close_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(schedule_to_start_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(heartbeat_deadline_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(start_to_close_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(wait_deadline_at) FROM " + s.T.Workflows + " WHERE status = 'waiting_for_signal')," +
		" (SELECT MIN(fire_at) FROM " + s.T.MachineTimers + ")"
	err := s.DB.QueryRowContext(ctx, q).Scan(&unreserved, nullTime{&d.Reserved},
		nullTime{&acts[0]}, nullTime{&acts[1]}, nullTime{&acts[2]}, nullTime{&acts[3]},
		nullTime{&d.Wait}, nullTime{&d.MachineTimer})
	if err != nil {
		return d, fmt.Errorf("read when the sweeps are due: %w", err)
	}
	d.Unreserved = unreserved.Valid
	for _, a := range acts {
		if !a.IsZero() && (d.Activity.IsZero() || a.Before(d.Activity)) {
			d.Activity = a
		}
	}
	return d, nil
}
