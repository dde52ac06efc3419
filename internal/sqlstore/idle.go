package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// The reads of driver.IdleReader: each one statement on the pool, outside
// a transaction, each through an index.

// JobNextDue implements driver.IdleReader: the first entry of
// idx_queue_status_available (queue, status, available_at), on PostgreSQL
// of the pending jobs' idx_go_due (queue, available_at), that a claim
// could take once due (the claim's conditions but the due time).
func (s *Store) JobNextDue(ctx context.Context, p driver.ClaimParams) (time.Time, bool, error) {
	if len(p.Handlers) == 0 {
		return time.Time{}, false, nil
	}
	q := "SELECT job.available_at FROM " + s.T.Jobs + " job WHERE job.queue = ? AND job.status = 'pending'" +
		" AND job.handler IN (" + placeholders(len(p.Handlers)) + ")" + claimBlockers(s.T, s.D, "?") +
		" ORDER BY job.available_at LIMIT 1"
	// The claim's options (Dialect.ClaimOptions): the read's best plan
	// depends on its handlers' share of the queue as the claim's does.
	args := append(slices.Clip(s.D.ClaimOptions), p.Queue)
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
// or last entry of an index (idx_reserved (status, reserved_at), the
// activity deadline columns' own indexes, (status, wait_deadline_at), the
// machine timers' fire_at, (status, deadline_at) and (status,
// run_deadline_at) once per status a deadline applies to, (status,
// failed_at), (status, completed_at), (status) for the running and the
// waiting_for_workflows ones, the batches' finished_at,
// the workers' last_heartbeat_at, the held claims' journal's expires_at).
func (s *Store) MaintenanceDue(ctx context.Context) (driver.MaintenanceDue, error) {
	p := s.due.get()
	if p.missing() && time.Since(p.probed) >= dueReprobe {
		p = s.probeDueTables(ctx)
		s.due.set(p)
	}
	d, err := s.maintenanceDue(ctx, p)
	if err == nil || p.missing() || unreached(ctx, err) {
		return d, err
	}
	// The server refused the read: a table it reads may be missing.
	if q := s.probeDueTables(ctx); q.missing() {
		if d, qerr := s.maintenanceDue(ctx, q); qerr == nil {
			s.due.set(q)
			return d, nil
		}
	}
	return d, err
}

// dueReprobe is how often MaintenanceDue looks again for the tables its
// read left out because they were missing (a variable for the tests).
var dueReprobe = time.Minute

// dueParts says which of the tables that the latest migrations added
// MaintenanceDue's read leaves out: a store opened without migrating
// (queuety.SkipMigrate) on tables an older release migrated lacks them.
// A table left out has nothing due: its sweep (the state-machine timers)
// or the registry's prune would fail on it. It is looked for again every
// dueReprobe, so a migration another process applies is seen within it.
type dueParts struct {
	noTimers, noWorkers bool
	noHeld              bool      // the held claims' journal (stores that hold claims)
	probed              time.Time // when the tables were looked for
}

func (p dueParts) missing() bool { return p.noTimers || p.noWorkers || p.noHeld }

// dueState holds a store's dueParts.
type dueState struct {
	mu sync.Mutex
	p  dueParts
}

func (d *dueState) get() dueParts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.p
}

func (d *dueState) set(p dueParts) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.p = p
}

// probeDueTables looks for the tables of dueParts, one statement each; a
// table the server refuses to read counts as missing. A read that never
// reached the server (the connection lost or refused, ctx ended) says
// nothing of the table, which keeps what the store knew of it: a network
// blip must not leave out tables that are there.
func (s *Store) probeDueTables(ctx context.Context) dueParts {
	was := s.due.get()
	absent := func(table string, before bool) bool {
		rows, err := s.DB.QueryContext(ctx, "SELECT 1 FROM "+table+" WHERE 1 = 0")
		if err == nil {
			err = rows.Close()
		}
		switch {
		case err == nil:
			return false
		case unreached(ctx, err):
			return before
		default:
			return true
		}
	}
	p := dueParts{noTimers: absent(s.T.MachineTimers, was.noTimers), noWorkers: absent(s.T.Workers, was.noWorkers), probed: time.Now()}
	if s.D.Hold != nil {
		p.noHeld = absent(s.T.HeldClaims, was.noHeld)
	}
	return p
}

// unreached reports whether err is a statement's failure to reach the
// server (or to get its answer back) rather than the server's refusal.
func unreached(ctx context.Context, err error) bool {
	var netErr net.Error
	return ctx.Err() != nil || isBadConn(err) || errors.As(err, &netErr) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// maintenanceDue is MaintenanceDue's read, without the tables p leaves
// out.
func (s *Store) maintenanceDue(ctx context.Context, p dueParts) (driver.MaintenanceDue, error) {
	var d driver.MaintenanceDue
	var unreserved, running, waitingWfs, batchOpen sql.NullInt64
	var acts [4]time.Time
	var deadlines [2 * len(deadlineStatuses)]time.Time
	w := s.T.Workflows
	q := "SELECT (SELECT 1 FROM " + s.T.Jobs + " WHERE status = 'processing' AND reserved_at IS NULL LIMIT 1)," +
		" (SELECT MIN(reserved_at) FROM " + s.T.Jobs + " WHERE status = 'processing')," +
		" (SELECT MIN(schedule_to_close_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(schedule_to_start_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(heartbeat_deadline_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(start_to_close_at) FROM " + s.T.Jobs + ")," +
		" (SELECT MIN(wait_deadline_at) FROM " + w + " WHERE status = 'waiting_for_signal')"
	dest := []any{&unreserved, nullTime{&d.Reserved},
		nullTime{&acts[0]}, nullTime{&acts[1]}, nullTime{&acts[2]}, nullTime{&acts[3]},
		nullTime{&d.Wait}}
	if !p.noTimers {
		q += ", (SELECT MIN(fire_at) FROM " + s.T.MachineTimers + ")"
		dest = append(dest, nullTime{&d.MachineTimer})
	}
	// One MIN per status: a MIN over an IN list reads every entry of the
	// statuses, a MIN per status one entry.
	for i, st := range deadlineStatuses {
		q += ", (SELECT MIN(deadline_at) FROM " + w + " WHERE status = '" + st + "')" +
			", (SELECT MIN(run_deadline_at) FROM " + w + " WHERE status = '" + st + "')"
		dest = append(dest, nullTime{&deadlines[2*i]}, nullTime{&deadlines[2*i+1]})
	}
	q += ", (SELECT MAX(deadline_at) FROM " + w + " WHERE status = 'failed')" +
		", (SELECT MAX(failed_at) FROM " + w + " WHERE status = 'failed')" +
		", (SELECT MAX(completed_at) FROM " + w + " WHERE status = 'cancelled')" +
		", (SELECT 1 FROM " + w + " WHERE status = 'running' LIMIT 1)" +
		", (SELECT 1 FROM " + w + " WHERE status = 'waiting_for_workflows' LIMIT 1)" +
		", (SELECT 1 FROM " + s.T.Batches + " WHERE finished_at IS NULL LIMIT 1)" +
		", (SELECT MAX(finished_at) FROM " + s.T.Batches + ")"
	dest = append(dest, nullTime{&d.FailedDeadline}, nullTime{&d.Failed}, nullTime{&d.Cancelled},
		&running, &waitingWfs, &batchOpen, nullTime{&d.BatchFinished})
	if !p.noWorkers {
		q += ", (SELECT MIN(last_heartbeat_at) FROM " + s.T.Workers + ")"
		dest = append(dest, nullTime{&d.WorkerHeartbeat})
	}
	if s.D.Hold != nil && !p.noHeld {
		q += ", (SELECT MIN(expires_at) FROM " + s.T.HeldClaims + ")"
		dest = append(dest, nullTime{&d.HeldClaims})
	}
	if err := s.DB.QueryRowContext(ctx, q).Scan(dest...); err != nil {
		return d, fmt.Errorf("read when the sweeps are due: %w", err)
	}
	d.Unreserved, d.Running, d.BatchOpen = unreserved.Valid, running.Valid, batchOpen.Valid
	d.WaitingForWorkflows = waitingWfs.Valid
	d.Activity = earliest(acts[:])
	d.Deadline = earliest(deadlines[:])
	return d, nil
}

// deadlineStatuses are the workflow statuses a deadline applies to
// (nonTerminal).
var deadlineStatuses = [...]string{"running", "paused", "waiting_for_signal", "waiting_for_workflows"}

// earliest is the earliest of ts that is not zero, or zero.
func earliest(ts []time.Time) time.Time {
	var e time.Time
	for _, t := range ts {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}
