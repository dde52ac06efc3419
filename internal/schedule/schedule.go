package schedule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/schedexpr"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Clock tells the schedules the time: every next run, last run and
// firing time they write.
type Clock interface {
	Now() time.Time
}

// StartWorkflow starts, in tx, the workflow that workflow schedule s
// fires for slot at now, and returns its id. It decodes the stored
// definition and payload, gives the workflow the idempotency key
// FiringKey returns, and inserts it; an error the row itself causes (an
// unreadable definition or payload) is wrapped with Unreadable.
type StartWorkflow func(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time) (int64, error)

// Config holds what a Service needs beside its store. Zero fields take the
// defaults named on each field.
type Config struct {
	// Clock tells the time (default: the system clock in UTC).
	Clock Clock
	// Logger receives the ticks' warnings and errors (default
	// slog.Default()).
	Logger *slog.Logger
	// StartWorkflow starts the workflows that workflow schedules fire
	// (default: none; a workflow schedule's firing then fails as
	// unreadable).
	StartWorkflow StartWorkflow
	// WakeJobs is called after a firing committed, so claim loops start
	// the dispatched jobs without a poll (default: nothing).
	WakeJobs func()
	// WakeSchedules is called after a schedule was saved or switched on,
	// so the schedule ticks read the next due time again (default:
	// nothing).
	WakeSchedules func()
}

// Service saves, operates and ticks the schedules of one store. It is safe
// for concurrent use.
type Service struct {
	store         driver.Store
	clock         Clock
	log           *slog.Logger
	startWorkflow StartWorkflow
	wakeJobs      func()
	wakeSchedules func()
}

// New returns the schedules of store.
func New(store driver.Store, cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StartWorkflow == nil {
		cfg.StartWorkflow = func(_ context.Context, _ driver.Tx, s *driver.Schedule, _, _ time.Time) (int64, error) {
			return 0, Unreadable(fmt.Errorf("schedule %d: no workflow dispatcher", s.ID))
		}
	}
	if cfg.WakeJobs == nil {
		cfg.WakeJobs = func() {}
	}
	if cfg.WakeSchedules == nil {
		cfg.WakeSchedules = func() {}
	}
	return &Service{store: store, clock: cfg.Clock, log: cfg.Logger, startWorkflow: cfg.StartWorkflow,
		wakeJobs: cfg.WakeJobs, wakeSchedules: cfg.WakeSchedules}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// floorSecond truncates t to the whole second (Queuety's DATETIME columns
// have second precision).
func floorSecond(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// wrap prefixes err with the operation it failed in; nil stays nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queuety: %s: %w", what, err)
}

// MaxCatchUp bounds the firings one tick makes for one schedule under
// driver.CatchUpAll; the slots beyond it stay due and the following ticks
// fire them.
const MaxCatchUp = 100

// Save writes a schedule and returns its id. A schedule with the
// same handler (or workflow key) is updated in place: its next run is
// recomputed only when the expression changed or it is switched back on,
// and its enabled flag is kept unless setEnabled, so saving the same
// schedule at every application start is safe.
func (e *Service) Save(ctx context.Context, sched driver.Schedule, setEnabled bool) (int64, error) {
	expr, err := parseSchedule(&sched)
	if err != nil {
		return 0, fmt.Errorf("queuety: save schedule %q: %w", sched.Handler, fmt.Errorf("%w: %v", driver.ErrInvalidArgument, err))
	}
	var id int64
	var wrote bool
	save := func(tx driver.Tx) error {
		wrote = false
		now := e.clock.Now()
		s := sched
		old, err := tx.ScheduleByHandler(ctx, s.Handler, driver.LockUpdate)
		switch {
		case errors.Is(err, queuetytype.ErrNotFound):
			s.CreatedAt, s.NextRun = now, expr.Next(floorSecond(now))
		case err != nil:
			return err
		default:
			s.ID, s.CreatedAt, s.LastRun, s.LastRunRef, s.PendingRun = old.ID, old.CreatedAt, old.LastRun, old.LastRunRef, old.PendingRun
			if !setEnabled {
				s.Enabled = old.Enabled
			}
			s.NextRun = old.NextRun
			if old.Expression != s.Expression || old.ExpressionType != s.ExpressionType || (s.Enabled && !old.Enabled) {
				s.NextRun = expr.Next(floorSecond(now))
			}
			if sameScheduleSettings(&s, old) {
				id = old.ID
				return nil // stored as saved: nothing to write
			}
		}
		if err := tx.ScheduleSave(ctx, &s); err != nil {
			return err
		}
		id, wrote = s.ID, true
		return nil
	}
	// A read that finds no row locks nothing, so two processes saving a
	// new schedule at once both insert; the loser updates the row the
	// winner wrote on the next pass.
	for range 3 {
		if err = e.store.InTx(ctx, save); !errors.Is(err, driver.ErrDuplicate) {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("queuety: save schedule %q: %w", sched.Handler, err)
	}
	if wrote {
		e.wakeSchedules() // this process's schedule ticks read the new next run at once
	}
	return id, nil
}

// sameScheduleSettings reports whether s holds what the stored row old holds in
// every column Save sets.
func sameScheduleSettings(s, old *driver.Schedule) bool {
	return s.Queue == old.Queue && s.Expression == old.Expression && s.ExpressionType == old.ExpressionType &&
		s.Overlap == old.Overlap && s.Enabled == old.Enabled && s.CatchUp == old.CatchUp && s.NextRun.Equal(old.NextRun) &&
		bytes.Equal(s.Payload, old.Payload) && bytes.Equal(s.Workflow, old.Workflow)
}

// parseSchedule reads a stored expression.
func parseSchedule(s *driver.Schedule) (schedexpr.Schedule, error) {
	return schedexpr.Parse(schedexpr.Type(s.ExpressionType), s.Expression)
}

// Remove deletes a schedule; jobs it dispatched are not touched.
func (e *Service) Remove(ctx context.Context, id int64) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		if _, err := tx.ScheduleGet(ctx, id, driver.LockUpdate); err != nil {
			return err
		}
		return tx.ScheduleDelete(ctx, id)
	})
	return wrap(fmt.Sprintf("remove schedule %d", id), err)
}

// RemoveByHandler deletes the schedule of a handler, as Queuety's
// `schedule remove <handler>` does, and returns its id. A workflow
// schedule's handler is its stored name, "__queuety_workflow:<key>". It
// returns queuetytype.ErrNotFound when the handler has no schedule.
func (e *Service) RemoveByHandler(ctx context.Context, handler string) (int64, error) {
	var id int64
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		s, err := tx.ScheduleByHandler(ctx, handler, driver.LockUpdate)
		if err != nil {
			return err
		}
		id = s.ID
		return tx.ScheduleDelete(ctx, s.ID)
	})
	return id, wrap(fmt.Sprintf("remove the schedule of %q", handler), err)
}

// SetEnabled enables or disables a schedule. Enabling moves a
// next run that lies in the past to the next slot after now, so a schedule
// disabled for a while does not fire for the time it was off.
func (e *Service) SetEnabled(ctx context.Context, id int64, enabled bool) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		s, err := tx.ScheduleGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		old := s.NextRun
		if enabled && !s.Enabled {
			now := e.clock.Now()
			if expr, err := parseSchedule(s); err == nil && !s.NextRun.After(now) {
				s.NextRun = expr.Next(floorSecond(now))
			}
		}
		s.Enabled = enabled
		_, err = tx.ScheduleUpdate(ctx, s, old)
		return err
	})
	if err == nil && enabled {
		e.wakeSchedules()
	}
	return wrap(fmt.Sprintf("set schedule %d enabled=%v", id, enabled), err)
}

// RunNow fires a schedule once now, outside its timetable (its
// next run is unchanged), honouring its overlap policy. It returns the id
// of the job or workflow it dispatched, or 0 when the policy held it back.
func (e *Service) RunNow(ctx context.Context, id int64) (int64, error) {
	var ref int64
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		ref = 0
		s, err := tx.ScheduleGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		old := s.NextRun
		fired, err := e.fire(ctx, tx, s, now, now, &runState{})
		if err != nil {
			return err
		}
		ref = fired
		_, err = tx.ScheduleUpdate(ctx, s, old)
		return err
	})
	if err == nil && ref != 0 {
		e.wakeJobs()
	}
	return ref, wrap(fmt.Sprintf("run schedule %d", id), err)
}

// TickOne handles one locked, due schedule, taken by the tick's sweep in
// tx at now; what it notes beside its firings goes to notes. See tickOne.
func (e *Service) TickOne(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time, notes *TickNotes) (int, bool, error) {
	return e.tickOne(ctx, tx, s, now, &runState{}, notes)
}

// tickOne handles one locked, due schedule: its buffered firing, once the
// run it waits for has ended, then the slots its next run has reached. It
// returns how many jobs or workflows it dispatched and whether it wrote
// the row (it does not when only a buffered firing was due and its run is
// still active). Slots the catch-up policy merged or skipped, and a
// CatchUpAll backlog left for the next tick, are noted in notes.
func (e *Service) tickOne(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time, run *runState, notes *TickNotes) (int, bool, error) {
	oldNext := s.NextRun
	fired := 0
	if !s.PendingRun.IsZero() && !s.PendingRun.After(now) {
		active, err := e.runActive(ctx, tx, s, run)
		if err != nil {
			return 0, false, err
		}
		if !active {
			slot := s.PendingRun
			s.PendingRun = time.Time{}
			if _, err := e.dispatchFiring(ctx, tx, s, slot, now, run); err != nil {
				if !e.putOffUnreadable(s, now, err) {
					return 0, false, err
				}
			} else {
				fired++
			}
		}
	}
	if s.NextRun.After(now) {
		if fired == 0 {
			return 0, false, nil
		}
	} else if expr, err := parseSchedule(s); err != nil {
		// A malformed expression (written by hand or by another runtime)
		// must not stall the tick: try again in an hour.
		e.log.Error("queuety: schedule has an invalid expression; retrying in an hour", "schedule_id", s.ID, "handler", s.Handler, "err", err)
		s.NextRun = floorSecond(now).Add(scheduleRetryAfter)
	} else {
		policy := s.EffectiveCatchUp()
		firings, next, missed := catchUp(expr, policy, s.NextRun, now)
		dispatched := 0
		s.NextRun = next
		for _, slot := range firings {
			ref, err := e.fire(ctx, tx, s, slot, now, run)
			if err != nil {
				if !e.putOffUnreadable(s, now, err) {
					return 0, false, err
				}
				missed, notes.backlog = 0, false
				break
			}
			if ref != 0 {
				dispatched++
			}
		}
		fired += dispatched
		if missed > 0 {
			notes.missed = append(notes.missed, missedSlots{id: s.ID, handler: s.Handler, policy: policy,
				slots: missed, fired: dispatched, first: oldNext, at: now})
		}
		if !s.NextRun.After(now) {
			notes.backlog = true
		}
	}
	ok, err := tx.ScheduleUpdate(ctx, s, oldNext)
	if err != nil {
		return 0, false, err
	}
	if !ok {
		// Another ticker moved next_run first (one that does not lock the
		// row). Roll back this tick's firings; the next tick sees the new
		// next_run.
		return 0, false, fmt.Errorf("schedule %d: next_run changed by another ticker", s.ID)
	}
	return fired, true, nil
}

// putOffUnreadable reports whether err is an unreadableSchedule; if so it
// logs it and moves the schedule's next run scheduleRetryAfter on (its
// buffered firing dropped), so the tick goes on with the other schedules
// and an operator can mend or remove the row.
func (e *Service) putOffUnreadable(s *driver.Schedule, now time.Time, err error) bool {
	var u unreadableSchedule
	if !errors.As(err, &u) {
		return false
	}
	e.log.Error("queuety: schedule cannot be dispatched; retrying in an hour", "schedule_id", s.ID, "handler", s.Handler, "err", err)
	s.NextRun = floorSecond(now).Add(scheduleRetryAfter)
	s.PendingRun = time.Time{}
	return true
}

// TickNotes is what one tick transaction noted beside its firings. The
// zero value is ready; Reset it when the transaction runs again.
type TickNotes struct {
	missed  []missedSlots // schedules whose catch-up policy merged or skipped slots
	backlog bool          // a CatchUpAll schedule still has due slots
}

// Reset forgets what an earlier run of the tick's transaction noted.
func (n *TickNotes) Reset() { *n = TickNotes{missed: n.missed[:0]} }

// Backlog reports that a CatchUpAll schedule still has due slots after
// the tick.
func (n *TickNotes) Backlog() bool { return n.backlog }

// LogMissed logs, once the tick committed, a warning for each schedule
// whose catch-up policy merged or skipped slots, and returns how many due
// slots got no firing of their own.
func (e *Service) LogMissed(n *TickNotes) int {
	missed := 0
	for _, m := range n.missed {
		missed += m.slots
		e.log.Warn("queuety: schedule slots missed: the tick came after more than one of them",
			"schedule_id", m.id, "handler", m.handler, "catch_up", string(m.policy), "missed", m.slots, "fired", m.fired,
			"first_due", m.first.UTC().Format(time.RFC3339), "ticked_at", m.at.UTC().Format(time.RFC3339))
	}
	return missed
}

// missedSlots describes the slots of one schedule that one tick did not
// fire one by one.
type missedSlots struct {
	id      int64
	handler string
	policy  driver.CatchUpPolicy
	slots   int       // due slots without a firing of their own
	fired   int       // runs dispatched for the due slots (0 or 1; the overlap policy may hold one back)
	first   time.Time // the first due slot
	at      time.Time // the tick's time
}

// catchUp returns the slots a tick at now fires for a schedule whose next
// run, next, is due, under catch-up policy p; the schedule's next run after
// the tick; and how many due slots get no firing of their own.
//
// CatchUpAll fires every due slot, at most MaxCatchUp per tick: the next
// run then stays at the first slot not fired, still due, for the next
// tick. CatchUpOnce fires the last due slot for all of them. CatchUpNone
// fires a due slot only when it is the only one. The next run is
// otherwise the first slot after now.
func catchUp(expr schedexpr.Schedule, p driver.CatchUpPolicy, next, now time.Time) (firings []time.Time, following time.Time, missed int) {
	var last time.Time
	n := 0
	slot := next
	for ; !slot.IsZero() && !slot.After(now); slot = expr.Next(slot) {
		if p == driver.CatchUpAll {
			if n == MaxCatchUp {
				return firings, slot, 0
			}
			firings = append(firings, slot)
		}
		last = slot
		n++
	}
	if slot.IsZero() { // nothing within the cron library's horizon
		slot = floorSecond(now).Add(24 * time.Hour)
	}
	switch {
	case n == 0: // a zero next run: nothing to fire
		return nil, slot, 0
	case p == driver.CatchUpAll:
		return firings, slot, 0
	case p == driver.CatchUpNone && n > 1:
		return nil, slot, n
	}
	return []time.Time{last}, slot, n - 1
}

// fire applies the overlap policy to one firing and dispatches it when
// allowed. It returns the dispatched id (0 when held back or dropped) and
// updates s in memory (last_run, pending run, last reference).
func (e *Service) fire(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time, run *runState) (int64, error) {
	if s.Overlap == driver.OverlapSkip || s.Overlap == driver.OverlapBuffer {
		active, err := e.runActive(ctx, tx, s, run)
		if err != nil {
			return 0, err
		}
		if active {
			if s.Overlap == driver.OverlapBuffer {
				// A buffered firing has not run yet: last_run stays, as in
				// Queuety PHP.
				if s.PendingRun.IsZero() {
					s.PendingRun = slot
				}
				return 0, nil
			}
			s.LastRun = floorSecond(now) // a skipped slot counts as run, as in Queuety PHP
			return 0, nil
		}
	}
	return e.dispatchFiring(ctx, tx, s, slot, now, run)
}

// unreadableSchedule wraps the error of a schedule whose stored
// definition or payload cannot be read or dispatched: a fault of the row,
// not of the database, so the tick puts that schedule off instead of
// failing the firings of every other schedule.
type unreadableSchedule struct{ err error }

func (u unreadableSchedule) Error() string { return u.err.Error() }
func (u unreadableSchedule) Unwrap() error { return u.err }

// Unreadable marks err as a fault of the schedule row (its stored
// definition or payload cannot be read or dispatched), not of the
// database: the tick then puts that schedule off for an hour instead of
// failing the firings of every other schedule. StartWorkflow uses it.
func Unreadable(err error) error { return unreadableSchedule{err} }

// scheduleRetryAfter is how long a schedule whose row cannot be read or
// dispatched waits before the tick tries it again.
const scheduleRetryAfter = time.Hour

// FiringKey returns the idempotency key of the workflow a schedule fires
// for slot: the key its definition carries (definitionKey), or
// "queuety-schedule:<id>" when it carries none, followed by "@" and the
// slot, so each slot starts its workflow once however often it is fired.
func FiringKey(definitionKey string, scheduleID int64, slot time.Time) string {
	key := definitionKey
	if key == "" {
		key = "queuety-schedule:" + strconv.FormatInt(scheduleID, 10)
	}
	return key + "@" + slot.UTC().Format(time.RFC3339)
}

// dispatchFiring dispatches one firing's job or workflow and records it in
// run. An error the row itself causes is an unreadableSchedule.
func (e *Service) dispatchFiring(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time, run *runState) (int64, error) {
	s.LastRun = floorSecond(now)
	if s.IsWorkflow() {
		id, err := e.startWorkflow(ctx, tx, s, slot, now)
		if err != nil {
			return 0, err
		}
		s.LastRunRef = id
		// The slot's idempotency key may have returned a workflow an
		// earlier firing started, finished or not: read it when asked.
		*run = runState{}
		return id, nil
	}
	payload := s.Payload
	if len(payload) == 0 {
		payload = []byte("[]")
	}
	queue := s.Queue
	if queue == "" {
		queue = queuetytype.DefaultQueue
	}
	j := &driver.Job{Queue: queue, Handler: s.Handler, Payload: payload, Status: driver.JobPending,
		MaxAttempts: queuetytype.DefaultMaxAttempts, AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now)}
	if err := tx.JobInsert(ctx, []*driver.Job{j}); err != nil {
		return 0, err
	}
	s.LastRunRef = j.ID
	*run = runState{known: true, active: true} // the job just inserted is pending
	return j.ID, nil
}

// runState is what one transaction knows of whether a schedule's last run
// is still active, so the overlap policy reads that run at most once per
// schedule however many slots a tick fires.
type runState struct{ known, active bool }

// runActive reports whether the run s last dispatched is still active,
// reading it unless run already knows.
func (e *Service) runActive(ctx context.Context, tx driver.Tx, s *driver.Schedule, run *runState) (bool, error) {
	if !run.known {
		active, err := e.scheduleActive(ctx, tx, s)
		if err != nil {
			return false, err
		}
		*run = runState{known: true, active: active}
	}
	return run.active, nil
}

// activeRun reports whether a schedule's job still counts as its running
// run for the overlap policy: pending or processing.
func activeRun(j *driver.Job) bool {
	return j.Status == driver.JobPending || j.Status == driver.JobProcessing
}

// scheduleActive reports whether the schedule's previous run is still
// pending or processing (a job) or not finished (a workflow). For rows
// without a recorded run (written by Queuety PHP), a job schedule counts
// any pending or processing job of its handler, as Queuety does.
func (e *Service) scheduleActive(ctx context.Context, tx driver.Tx, s *driver.Schedule) (bool, error) {
	if s.LastRunRef == 0 {
		if s.IsWorkflow() {
			return false, nil
		}
		n, err := tx.JobCountActiveByHandler(ctx, s.Handler)
		return n > 0, err
	}
	if s.IsWorkflow() {
		wf, err := tx.WorkflowGet(ctx, s.LastRunRef, driver.LockNone)
		if errors.Is(err, queuetytype.ErrNotFound) {
			return false, nil
		}
		return err == nil && !wf.Status.Terminal(), err
	}
	j, err := tx.JobGet(ctx, s.LastRunRef, driver.LockNone)
	if errors.Is(err, queuetytype.ErrNotFound) {
		return false, nil
	}
	return err == nil && activeRun(j), err
}

// NextDueBuffered returns the earliest next run of an enabled schedule
// (ok false when no schedule is enabled), which workers sleep until, and
// whether a firing is buffered behind its schedule's previous run: that
// one waits for the run to end, which no stored time predicts. On a store
// that can (driver.IdleReader) it is one statement outside a transaction;
// other stores cannot tell buffered, reported true.
func (e *Service) NextDueBuffered(ctx context.Context) (next time.Time, ok, buffered bool, err error) {
	if r, can := e.store.(driver.IdleReader); can {
		next, buffered, err = r.ScheduleNextDueRead(ctx)
	} else {
		buffered = true
		err = e.store.InTx(ctx, func(tx driver.Tx) (err error) { next, err = tx.ScheduleNextDue(ctx); return err })
	}
	if err != nil {
		return time.Time{}, false, false, fmt.Errorf("queuety: next schedule due: %w", err)
	}
	return next, !next.IsZero(), buffered, nil
}
