package queuety

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/schedexpr"
	"github.com/queuety/queuety-go/store/driver"
)

// MaxCatchUp bounds the firings one tick makes for one schedule under
// CatchUpAll.
const MaxCatchUp = 100

// ScheduleBuilder configures a schedule; Save writes it.
type ScheduleBuilder struct {
	c          *Client
	s          driver.Schedule
	def        *WorkflowDefinition
	enabledSet bool // Enabled or Disabled was called
	err        error
}

// Schedule starts a recurring job schedule for handler with payload
// (anything that encodes as a JSON object; nil for none). Set when it fires
// with Cron, Every or Interval, then call Save:
//
//	id, err := q.Schedule("cleanup_sessions", queuety.State{"older_than_days": 30}).
//		Cron("0 3 * * *").OnQueue("maintenance").Overlap(queuety.OverlapSkip).Save(ctx)
func (c *Client) Schedule(handler string, payload any) *ScheduleBuilder {
	b := &ScheduleBuilder{c: c, s: driver.Schedule{Handler: handler, Queue: DefaultQueue, Overlap: driver.OverlapAllow, Enabled: true, CatchUp: driver.CatchUpOnce}}
	if err := validateHandlerName(handler); err != nil {
		b.err = err
	} else if IsInternalHandler(handler) {
		b.err = invalidf("handler names starting with __queuety_ are reserved")
	}
	b.setPayload("schedule payload", payload)
	return b
}

// ScheduleWorkflow starts a schedule that dispatches a fresh workflow from
// def, with state as its initial state, at each firing. The schedule's key
// is the workflow's name (change it with Key to schedule one workflow
// several ways). Each firing's workflow gets an idempotency key made of the
// definition's key (or the schedule's) and the firing time, so a firing
// can never start two workflows.
func (c *Client) ScheduleWorkflow(def WorkflowDefinition, state any) *ScheduleBuilder {
	b := &ScheduleBuilder{c: c, s: driver.Schedule{Queue: orDefault(def.Queue, DefaultQueue), Overlap: driver.OverlapAllow, Enabled: true, CatchUp: driver.CatchUpOnce}}
	norm, err := def.normalized()
	if err != nil {
		b.err = err
		return b
	}
	b.def = &norm
	b.s.Handler = driver.WorkflowSchedulePrefix + def.Name
	b.setPayload("initial state", state)
	return b
}

func (b *ScheduleBuilder) setPayload(what string, v any) {
	o, err := toObject(what, v)
	if err != nil {
		b.fail(err)
		return
	}
	for _, k := range o.Keys() {
		if k == runtimeKey || k == callbackKey || (b.def != nil && isPrivateKey(k)) {
			b.fail(invalidf("%s key %q is reserved", what, k))
			return
		}
	}
	b.s.Payload = encodeJSON(o)
}

func (b *ScheduleBuilder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Key names a workflow schedule (default: the workflow's name). Each key
// is one schedule.
func (b *ScheduleBuilder) Key(key string) *ScheduleBuilder {
	if b.def == nil {
		b.fail(invalidf("Key applies to workflow schedules; a job schedule is keyed by its handler"))
		return b
	}
	if strings.TrimSpace(key) == "" {
		b.fail(invalidf("schedule key is empty"))
		return b
	}
	b.s.Handler = driver.WorkflowSchedulePrefix + key
	return b
}

// cronDescriptors are the cron descriptors spelled as the five fields
// Queuety PHP's parser reads, so a saved schedule runs on either side.
var cronDescriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Cron fires on a 5-field cron expression ("*/5 * * * *") or a descriptor
// ("@hourly", "@daily", "@every 90s"), in UTC. Descriptors are stored as
// the equivalent five fields, and "@every d" as the interval d, which is
// what Queuety PHP can read. See the schedexpr package for how
// day-of-month and day-of-week combine.
func (b *ScheduleBuilder) Cron(expr string) *ScheduleBuilder {
	spec := strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(spec, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			b.fail(invalidf("cron expression %q: @every needs a Go duration such as 90s or 1h", expr))
			return b
		}
		return b.Every(d)
	}
	if fields, ok := cronDescriptors[strings.ToLower(spec)]; ok {
		spec = fields
	}
	if _, err := schedexpr.ParseCron(spec); err != nil {
		b.fail(fmt.Errorf("%w: %v", ErrInvalidArgument, err))
	}
	b.s.Expression, b.s.ExpressionType = spec, driver.ScheduleCron
	return b
}

// Every fires every d (at least one second). It is stored as Queuety
// writes intervals ("300 seconds"), so Queuety PHP reads it too.
func (b *ScheduleBuilder) Every(d time.Duration) *ScheduleBuilder {
	if d < time.Second {
		b.fail(invalidf("schedule interval must be at least 1 second, got %s", d))
		return b
	}
	b.s.Expression = strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) + " seconds"
	b.s.ExpressionType = driver.ScheduleInterval
	return b
}

// Interval fires on a Queuety interval string ("15 minutes", "1 hour").
// A Go duration ("90s", "1h30m") is accepted too and stored as Every
// stores it, in a form Queuety PHP reads.
func (b *ScheduleBuilder) Interval(expr string) *ScheduleBuilder {
	if d, err := time.ParseDuration(strings.TrimSpace(expr)); err == nil {
		return b.Every(d)
	}
	if _, err := schedexpr.ParseInterval(expr); err != nil {
		b.fail(fmt.Errorf("%w: %v", ErrInvalidArgument, err))
	}
	b.s.Expression, b.s.ExpressionType = strings.TrimSpace(expr), driver.ScheduleInterval
	return b
}

// OnQueue sets the queue of the dispatched jobs (job schedules; a workflow
// schedule uses its definition's queue).
func (b *ScheduleBuilder) OnQueue(queue string) *ScheduleBuilder {
	if b.def != nil {
		b.fail(invalidf("OnQueue applies to job schedules; set the workflow definition's queue"))
		return b
	}
	if queue == "" || len(queue) > 64 {
		b.fail(invalidf("queue name must be 1-64 characters"))
		return b
	}
	b.s.Queue = queue
	return b
}

// Overlap sets the overlap policy (default OverlapAllow).
func (b *ScheduleBuilder) Overlap(p driver.OverlapPolicy) *ScheduleBuilder {
	switch p {
	case driver.OverlapAllow, driver.OverlapSkip, driver.OverlapBuffer:
		b.s.Overlap = p
	default:
		b.fail(invalidf("overlap policy %q (want allow, skip or buffer)", string(p)))
	}
	return b
}

// CatchUp sets the catch-up policy (default CatchUpOnce).
func (b *ScheduleBuilder) CatchUp(p driver.CatchUpPolicy) *ScheduleBuilder {
	switch p {
	case driver.CatchUpOnce, driver.CatchUpAll, driver.CatchUpNone:
		b.s.CatchUp = p
	default:
		b.fail(invalidf("catch-up policy %q (want once, all or none)", string(p)))
	}
	return b
}

// Disabled saves the schedule disabled. Without Enabled or Disabled, Save
// creates a schedule enabled and leaves an existing one's enabled flag as
// it is, so a schedule switched off from the CLI stays off when the
// application saves it again at start.
func (b *ScheduleBuilder) Disabled() *ScheduleBuilder {
	b.s.Enabled, b.enabledSet = false, true
	return b
}

// Enabled saves the schedule enabled, switching an existing disabled one
// back on (its missed slots are not fired; it continues with the next slot
// after now).
func (b *ScheduleBuilder) Enabled() *ScheduleBuilder {
	b.s.Enabled, b.enabledSet = true, true
	return b
}

// Save writes the schedule and returns its id. A schedule with the same
// handler (or workflow key) is updated in place: its next run is
// recomputed only when the expression changed or it is switched back on,
// and its enabled flag is kept unless Enabled or Disabled was called, so
// saving the same schedule at every application start is safe.
func (b *ScheduleBuilder) Save(ctx context.Context) (int64, error) {
	if b.err == nil && b.s.Expression == "" {
		b.err = invalidf("schedule has no expression: call Cron, Every or Interval")
	}
	if b.err != nil {
		return 0, fmt.Errorf("queuety: save schedule %q: %w", b.s.Handler, b.err)
	}
	if b.def != nil {
		b.s.Workflow = encodeJSON(encodeDefinition(*b.def))
	}
	expr, _ := parseSchedule(&b.s) // Cron, Every and Interval validated it
	var id int64
	save := func(tx driver.Tx) error {
		now := b.c.clock.Now()
		s := b.s
		old, err := tx.ScheduleByHandler(ctx, s.Handler, driver.LockUpdate)
		switch {
		case errors.Is(err, ErrNotFound):
			s.CreatedAt, s.NextRun = now, expr.Next(floorSecond(now))
		case err != nil:
			return err
		default:
			s.ID, s.CreatedAt, s.LastRun, s.LastRunRef, s.PendingRun = old.ID, old.CreatedAt, old.LastRun, old.LastRunRef, old.PendingRun
			if !b.enabledSet {
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
		id = s.ID
		return nil
	}
	// A read that finds no row locks nothing, so two processes saving a
	// new schedule at once both insert; the loser updates the row the
	// winner wrote on the next pass.
	var err error
	for range 3 {
		if err = b.c.store.InTx(ctx, save); !errors.Is(err, driver.ErrDuplicate) {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("queuety: save schedule %q: %w", b.s.Handler, err)
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

// Schedules lists every schedule, by id.
func (c *Client) Schedules(ctx context.Context) ([]*driver.Schedule, error) {
	var out []*driver.Schedule
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.ScheduleList(ctx); return err })
	return out, wrap("list schedules", err)
}

// ScheduleByID reads one schedule.
func (c *Client) ScheduleByID(ctx context.Context, id int64) (*driver.Schedule, error) {
	var s *driver.Schedule
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { s, err = tx.ScheduleGet(ctx, id, driver.LockNone); return err })
	return s, wrap("read schedule", err)
}

// RemoveSchedule deletes a schedule; jobs it dispatched are not touched.
func (c *Client) RemoveSchedule(ctx context.Context, id int64) error {
	err := c.store.InTx(ctx, func(tx driver.Tx) error {
		if _, err := tx.ScheduleGet(ctx, id, driver.LockUpdate); err != nil {
			return err
		}
		return tx.ScheduleDelete(ctx, id)
	})
	return wrap(fmt.Sprintf("remove schedule %d", id), err)
}

// SetScheduleEnabled enables or disables a schedule. Enabling moves a
// next run that lies in the past to the next slot after now, so a schedule
// disabled for a while does not fire for the time it was off.
func (c *Client) SetScheduleEnabled(ctx context.Context, id int64, enabled bool) error {
	err := c.store.InTx(ctx, func(tx driver.Tx) error {
		s, err := tx.ScheduleGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		old := s.NextRun
		if enabled && !s.Enabled {
			now := c.clock.Now()
			if expr, err := parseSchedule(s); err == nil && !s.NextRun.After(now) {
				s.NextRun = expr.Next(floorSecond(now))
			}
		}
		s.Enabled = enabled
		_, err = tx.ScheduleUpdate(ctx, s, old)
		return err
	})
	return wrap(fmt.Sprintf("set schedule %d enabled=%v", id, enabled), err)
}

// RunScheduleNow fires a schedule once now, outside its timetable (its
// next run is unchanged), honouring its overlap policy. It returns the id
// of the job or workflow it dispatched, or 0 when the policy held it back.
func (c *Client) RunScheduleNow(ctx context.Context, id int64) (int64, error) {
	var ref int64
	err := c.store.InTx(ctx, func(tx driver.Tx) error {
		ref = 0
		s, err := tx.ScheduleGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		now := c.clock.Now()
		old := s.NextRun
		fired, err := c.engine.fire(ctx, tx, s, now, now, &runState{})
		if err != nil {
			return err
		}
		ref = fired
		_, err = tx.ScheduleUpdate(ctx, s, old)
		return err
	})
	return ref, wrap(fmt.Sprintf("run schedule %d", id), err)
}

// TickSchedules fires the due schedules: up to limit rows taken with SKIP
// LOCKED, each changed under its lock with a compare-and-set on next_run,
// so any number of workers and processes ticking at once fire every due
// slot exactly once. It returns how many jobs or workflows it dispatched
// and whether calling it again may fire more: a full batch was due and
// the tick moved at least one of its schedules on (buffered firings still
// waiting for their runs alone do not count, or a caller looping on it
// would spin until those runs end).
func (e *Engine) TickSchedules(ctx context.Context, limit int) (int, bool, error) {
	var n int
	var more bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		n = 0
		now := e.c.clock.Now()
		due, err := tx.ScheduleFindDue(ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		moved := false
		for _, s := range due {
			fired, wrote, err := e.tickOne(ctx, tx, s, now, &runState{})
			if err != nil {
				return err
			}
			n, moved = n+fired, moved || wrote
		}
		more = len(due) >= limit && moved
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: tick schedules: %w", err)
	}
	return n, more, nil
}

// tickOne handles one locked, due schedule: its buffered firing, once the
// run it waits for has ended, then the slots its next run has reached. It
// returns how many jobs or workflows it dispatched and whether it wrote
// the row (it does not when only a buffered firing was due and its run is
// still active).
func (e *Engine) tickOne(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time, run *runState) (int, bool, error) {
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
				return 0, false, err
			}
			fired++
		}
	}
	if s.NextRun.After(now) {
		if fired == 0 {
			return 0, false, nil
		}
	} else if expr, err := parseSchedule(s); err != nil {
		// A malformed expression (written by hand or by another runtime)
		// must not stall the tick: try again in an hour.
		e.c.log.Error("queuety: schedule has an invalid expression; retrying in an hour", "schedule_id", s.ID, "handler", s.Handler, "err", err)
		s.NextRun = floorSecond(now).Add(time.Hour)
	} else {
		firings, next := catchUp(expr, s.CatchUp, s.NextRun, now)
		for _, slot := range firings {
			ref, err := e.fire(ctx, tx, s, slot, now, run)
			if err != nil {
				return 0, false, err
			}
			if ref != 0 {
				fired++
			}
		}
		s.NextRun = next
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

// catchUp returns the slots a tick fires for a schedule whose next run,
// next, is due, under catch-up policy p, and the first slot after now.
func catchUp(expr schedexpr.Schedule, p driver.CatchUpPolicy, next, now time.Time) (firings []time.Time, following time.Time) {
	var missed []time.Time // the first MaxCatchUp missed slots
	var last time.Time
	slot := next
	for ; !slot.IsZero() && !slot.After(now); slot = expr.Next(slot) {
		if len(missed) < MaxCatchUp {
			missed = append(missed, slot)
		}
		last = slot
	}
	if slot.IsZero() { // nothing within the cron library's horizon
		slot = floorSecond(now).Add(24 * time.Hour)
	}
	switch {
	case len(missed) == 0: // a zero next run: nothing to fire
		return nil, slot
	case p == driver.CatchUpAll:
		return missed, slot
	case p == driver.CatchUpNone && len(missed) > 1:
		return nil, slot
	}
	return []time.Time{last}, slot
}

// fire applies the overlap policy to one firing and dispatches it when
// allowed. It returns the dispatched id (0 when held back or dropped) and
// updates s in memory (last_run, pending run, last reference).
func (e *Engine) fire(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time, run *runState) (int64, error) {
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

// dispatchFiring dispatches one firing's job or workflow and records it in
// run.
func (e *Engine) dispatchFiring(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time, run *runState) (int64, error) {
	s.LastRun = floorSecond(now)
	if s.IsWorkflow() {
		def, err := decodeDefinition(s.Workflow)
		if err != nil {
			return 0, fmt.Errorf("schedule %d: %w", s.ID, err)
		}
		key := def.IdempotencyKey
		if key == "" {
			key = "queuety-schedule:" + strconv.FormatInt(s.ID, 10)
		}
		def.IdempotencyKey = key + "@" + slot.UTC().Format(time.RFC3339)
		state, err := decodeObject("schedule payload", s.Payload)
		if err != nil {
			return 0, fmt.Errorf("schedule %d: %w", s.ID, err)
		}
		p, err := prepareWorkflow(def, state)
		if err != nil {
			return 0, fmt.Errorf("schedule %d: %w", s.ID, err)
		}
		id, err := e.insertWorkflow(ctx, tx, p, now)
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
	j := &driver.Job{Queue: orDefault(s.Queue, DefaultQueue), Handler: s.Handler, Payload: payload, Status: JobPending,
		MaxAttempts: DefaultMaxAttempts, AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now)}
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
func (e *Engine) runActive(ctx context.Context, tx driver.Tx, s *driver.Schedule, run *runState) (bool, error) {
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
func activeRun(j *driver.Job) bool { return j.Status == JobPending || j.Status == JobProcessing }

// scheduleActive reports whether the schedule's previous run is still
// pending or processing (a job) or not finished (a workflow). For rows
// without a recorded run (written by Queuety PHP), a job schedule counts
// any pending or processing job of its handler, as Queuety does.
func (e *Engine) scheduleActive(ctx context.Context, tx driver.Tx, s *driver.Schedule) (bool, error) {
	if s.LastRunRef == 0 {
		if s.IsWorkflow() {
			return false, nil
		}
		n, err := tx.JobCountActiveByHandler(ctx, s.Handler)
		return n > 0, err
	}
	if s.IsWorkflow() {
		wf, err := tx.WorkflowGet(ctx, s.LastRunRef, driver.LockNone)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return err == nil && !wf.Status.Terminal(), err
	}
	j, err := tx.JobGet(ctx, s.LastRunRef, driver.LockNone)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && activeRun(j), err
}

// NextScheduleDue returns the earliest next run of an enabled schedule,
// and false when no schedule is enabled. Workers sleep until then. A
// buffered firing is not counted: it waits for its schedule's previous run
// to end, which no stored time predicts, and the first tick after that
// dispatches it.
func (e *Engine) NextScheduleDue(ctx context.Context) (time.Time, bool, error) {
	var t time.Time
	err := e.c.store.InTx(ctx, func(tx driver.Tx) (err error) { t, err = tx.ScheduleNextDue(ctx); return err })
	if err != nil {
		return time.Time{}, false, fmt.Errorf("queuety: next schedule due: %w", err)
	}
	return t, !t.IsZero(), nil
}

// encodeDefinition writes a workflow definition in Queuety's runtime
// definition shape (build_runtime_definition), plus the Go engine's keys.
func encodeDefinition(d WorkflowDefinition) *phpjson.Object {
	steps := make([]any, len(d.Steps))
	for i := range d.Steps {
		steps[i] = d.Steps[i].encode()
	}
	o := runtimeDefinition(d, steps)
	if d.RunTimeout > 0 {
		o.Set("run_timeout_seconds", int64(math.Ceil(d.RunTimeout.Seconds())))
	}
	if d.IdempotencyKey != "" {
		o.Set("idempotency_key", d.IdempotencyKey)
	}
	return o
}

// decodeDefinition reads what encodeDefinition wrote.
func decodeDefinition(raw []byte) (WorkflowDefinition, error) {
	o, err := decodeObject("workflow definition", raw)
	if err != nil {
		return WorkflowDefinition{}, err
	}
	d := WorkflowDefinition{
		Name: strField(o, "name"), Queue: strField(o, "queue"), MaxAttempts: int(intValue(o, "max_attempts")),
		ExecutionTimeout: time.Duration(intValue(o, "deadline_seconds")) * time.Second,
		RunTimeout:       time.Duration(intValue(o, "run_timeout_seconds")) * time.Second,
		OnCancel:         callbackName(o, "cancel_handler"), OnDeadline: callbackName(o, "deadline_handler"),
		Version: strField(o, "definition_version"), IdempotencyKey: strField(o, "idempotency_key"),
	}
	if p, ok := priorityField(o); ok {
		d.Priority = p
	}
	raws, _ := o.Get("steps")
	list, ok := raws.([]any)
	if !ok {
		return d, errors.New("workflow definition has no steps list")
	}
	for i, r := range list {
		step, err := parseStep(r, i)
		if err != nil {
			return d, fmt.Errorf("workflow definition step %d: %w", i, err)
		}
		d.Steps = append(d.Steps, stepFromDef(step))
	}
	return d, nil
}

// stepFromDef turns a decoded _steps entry back into a WorkflowStep.
func stepFromDef(s *stepDef) WorkflowStep {
	w := WorkflowStep{Type: StepType(s.Type), Name: s.Name}
	switch s.Type {
	case "single":
		w.Handler = s.Class
	case "parallel":
		w.Handlers = s.handlers()
	case "delay":
		w.Delay = time.Duration(s.Delay) * time.Second
	case "wait_for_signal":
		if len(s.SignalNames) > 0 {
			w.Signal = s.SignalNames[0]
		}
		w.ResultKey, w.Timeout = s.ResultKey, s.Timeout
	}
	rt := parseRuntimeFromDefinition(s.raw)
	w.Options = JobSpec{Queue: strField(s.raw, "queue"), MaxAttempts: int(intValue(s.raw, "max_attempts")),
		Backoff: rt.Backoff, Timeouts: rt.Timeouts, Delay: time.Duration(intValue(s.raw, "job_delay_seconds")) * time.Second}
	if w.Options.Timeouts.StartToClose == 0 && rt.TimeoutSeconds > 0 {
		w.Options.Timeouts.StartToClose = time.Duration(rt.TimeoutSeconds) * time.Second
	}
	if p, ok := priorityField(s.raw); ok {
		w.Options.Priority, w.Options.PrioritySet = p, true
	}
	return w
}
