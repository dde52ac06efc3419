package queuety

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/schedexpr"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// ScheduleBuilder configures a schedule; Save writes it.
type ScheduleBuilder struct {
	c          *Client
	s          queuetytype.Schedule
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
	b := &ScheduleBuilder{c: c, s: queuetytype.Schedule{Handler: handler, Queue: queuetytype.DefaultQueue, Overlap: queuetytype.OverlapAllow, Enabled: true, CatchUp: queuetytype.CatchUpOnce}}
	if err := dispatch.ValidateHandlerName(handler); err != nil {
		b.err = err
	} else if engine.IsInternalHandler(handler) {
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
	b := &ScheduleBuilder{c: c, s: queuetytype.Schedule{Queue: cmp.Or(def.Queue, queuetytype.DefaultQueue), Overlap: queuetytype.OverlapAllow, Enabled: true, CatchUp: queuetytype.CatchUpOnce}}
	norm, err := def.normalized()
	if err != nil {
		b.err = err
		return b
	}
	b.def = &norm
	b.s.Handler = queuetytype.WorkflowSchedulePrefix + def.Name
	b.setPayload("initial state", state)
	return b
}

func (b *ScheduleBuilder) setPayload(what string, v any) {
	o, err := workflowstate.ToObject(what, v)
	if err != nil {
		b.fail(err)
		return
	}
	for _, k := range o.Keys() {
		if dispatch.IsReservedPayloadKey(k) || (b.def != nil && workflowstate.IsPrivateKey(k)) {
			b.fail(invalidf("%s key %q is reserved", what, k))
			return
		}
	}
	b.s.Payload = workflowstate.EncodeJSON(o)
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
	b.s.Handler = queuetytype.WorkflowSchedulePrefix + key
	return b
}

// Cron fires on a 5-field cron expression ("*/5 * * * *") or a descriptor
// ("@hourly", "@daily", "@every 90s"), in UTC, or in the time zone of a
// CRON_TZ= prefix ("CRON_TZ=Europe/Berlin 0 9 * * *", 09:00 Berlin time
// across daylight-saving changes; Queuety PHP cannot read such a schedule,
// so only Go workers may tick it). The expression is stored in the form
// Queuety PHP reads the same way: descriptors as their five fields, names
// and "?" as numbers, "5-7" in the day of week as "0,5,6", and "@every d"
// as the interval d. A schedule fires on the slots Queuety PHP fires it on,
// whichever runtime ticks it: when both the day of month and the day of
// week are restricted, on days that match both ("0 0 13 * 5" is Friday the
// 13th), not either as in Vixie cron.
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
	canon, err := schedexpr.CanonicalCron(spec)
	if err != nil {
		b.fail(fmt.Errorf("%w: %v", queuetytype.ErrInvalidArgument, err))
	} else {
		spec = canon
	}
	b.s.Expression, b.s.ExpressionType = spec, queuetytype.ScheduleCron
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
	b.s.ExpressionType = queuetytype.ScheduleInterval
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
		b.fail(fmt.Errorf("%w: %v", queuetytype.ErrInvalidArgument, err))
	}
	b.s.Expression, b.s.ExpressionType = strings.TrimSpace(expr), queuetytype.ScheduleInterval
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
func (b *ScheduleBuilder) Overlap(p queuetytype.OverlapPolicy) *ScheduleBuilder {
	switch p {
	case queuetytype.OverlapAllow, queuetytype.OverlapSkip, queuetytype.OverlapBuffer:
		b.s.Overlap = p
	default:
		b.fail(invalidf("overlap policy %q (want allow, skip or buffer)", string(p)))
	}
	return b
}

// CatchUp sets the catch-up policy (default CatchUpOnce).
func (b *ScheduleBuilder) CatchUp(p queuetytype.CatchUpPolicy) *ScheduleBuilder {
	switch p {
	case queuetytype.CatchUpOnce, queuetytype.CatchUpAll, queuetytype.CatchUpNone:
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

// Schedules lists every schedule, by id.
func (c *Client) Schedules(ctx context.Context) ([]*queuetytype.Schedule, error) {
	var out []*queuetytype.Schedule
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.ScheduleList(ctx); return err })
	return out, wrap("list schedules", err)
}

// ScheduleByID reads one schedule.
func (c *Client) ScheduleByID(ctx context.Context, id int64) (*queuetytype.Schedule, error) {
	var s *queuetytype.Schedule
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { s, err = tx.ScheduleGet(ctx, id, driver.LockNone); return err })
	return s, wrap("read schedule", err)
}

// Save writes the schedule and returns its id. A schedule with the same
// handler (or workflow key) is updated in place: its next run is
// recomputed only when the expression changed or it is switched back on,
// and its enabled flag is kept unless Enabled or Disabled was called, so
// saving the same schedule at every application start is safe. A save
// that changed the row wakes the schedule tick of the workers of this
// process at once; workers of other processes see it within their idle
// period (worker.ScheduleIdleDefault).
func (b *ScheduleBuilder) Save(ctx context.Context) (int64, error) {
	if b.err == nil && b.s.Expression == "" {
		b.err = invalidf("schedule has no expression: call Cron, Every or Interval")
	}
	if b.err != nil {
		return 0, fmt.Errorf("queuety: save schedule %q: %w", b.s.Handler, b.err)
	}
	if b.def != nil {
		b.s.Workflow = workflowstate.EncodeJSON(b.def.engineDefinition().Encode())
	}
	return b.c.engine.Schedules().Save(ctx, b.s, b.enabledSet)
}
