package machine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Job is the attempt running an entry action job.
type Job struct {
	ID      int64
	Queue   string
	Attempt int
	Payload []byte
	// Fence, when set, locks the job row in a transaction and returns
	// ErrStaleAttempt when this attempt no longer owns the job. The
	// attempt's result and failure are written only while it returns nil.
	Fence func(context.Context, driver.Tx) error
}

// fence runs the job's attempt fence in tx.
func (j Job) fence(ctx context.Context, tx driver.Tx) error {
	if j.Fence == nil {
		return nil
	}
	return j.Fence(ctx, tx)
}

// current reports whether the machine of l still runs the entry that
// queued the action job run: it is running run's state, and the last
// action job queued for it is run's job. A job that runs again after its
// result was applied (stale recovery after the worker died before
// recording the job done) finds a later entry, or none, and changes
// nothing.
func (r *Runtime) current(ctx context.Context, tx driver.Tx, l *locked, run *actionRun) (bool, error) {
	if l.m.Status != queuetytype.MachineRunning || l.m.CurrentState != run.stateName {
		return false, nil
	}
	entry, err := tx.MachineEntryJob(ctx, l.m.ID)
	if err != nil {
		return false, err
	}
	return entry == run.job.ID, nil
}

// actionRun is what an action attempt knows when it fails.
type actionRun struct {
	job       Job
	id        int64
	stateName string
	eventName string
	eventPay  *phpjson.Object
	handler   string
	input     *phpjson.Object // nil until the action was about to run
	before    *phpjson.Object
	started   time.Time
}

// RunAction runs one entry action job (Queuety PHP's handle_action_job).
// The action runs outside any transaction; its result is applied under
// the machine's row lock only if the machine is still running the entry
// the job was queued for and the attempt still owns its job (job.Fence),
// so a job delivered twice applies its result once. A superseded attempt
// gets an error wrapping ErrStaleAttempt and writes nothing. An error is returned for the worker's retry
// policy; when final reports that the failure is the job's last, the
// machine is failed in the same transaction that records it.
func (r *Runtime) RunAction(ctx context.Context, job Job, h Handlers, final func(error) bool) error {
	if job.Payload == nil { // the stored text keeps the payload's key order
		err := r.Store.InTx(ctx, func(tx driver.Tx) error {
			j, err := tx.JobGet(ctx, job.ID, driver.LockNone)
			if err == nil {
				job.Payload = j.Payload
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("queuety: state machine action job %d: %w", job.ID, err)
		}
	}
	meta, err := phpjson.DecodeObject(job.Payload)
	if err != nil {
		return fmt.Errorf("State machine action payload is missing required metadata: %w", err)
	}
	id := num(meta, "machine_id", 0)
	if s, ok := get(meta, "machine_id").(string); ok {
		fmt.Sscan(s, &id)
	}
	stateName := strings.TrimSpace(str(meta, "state_name"))
	if id <= 0 || stateName == "" {
		return fmt.Errorf("%w: State machine action payload is missing required metadata.", queuetytype.ErrInvalidArgument)
	}
	ev, _ := get(meta, "event_name").(string)
	if strings.TrimSpace(ev) == "" {
		ev = ""
	}
	evPay, _ := asObject(get(meta, "event_payload"))
	if evPay == nil {
		evPay = phpjson.NewObject()
	}
	run := &actionRun{job: job, id: id, stateName: stateName, eventName: ev, eventPay: evPay, started: time.Now()}

	var l *locked
	var cur bool
	err = r.Store.InTx(ctx, func(tx driver.Tx) (err error) {
		if err := job.fence(ctx, tx); err != nil {
			return err
		}
		if l, err = r.lock(ctx, tx, id, driver.LockNone); err != nil {
			return err
		}
		cur, err = r.current(ctx, tx, l, run)
		return err
	})
	if err != nil {
		return fmt.Errorf("queuety: state machine action: %w", err)
	}
	if !cur {
		return nil
	}
	if l.sd.action == nil {
		return r.failAction(ctx, run, rule("State '%s' does not define an action.", stateName), final)
	}
	run.handler = l.sd.action.class
	fn, ok := h.action(run.handler)
	if !ok {
		return r.failAction(ctx, run, rule("State action class '%s' could not be loaded.", run.handler), final)
	}
	run.before = l.st
	run.input = obj("state", l.st, "event", nullable(ev), "event_payload", evPay, "payload", l.sd.action.payload)
	result, aerr := safeAction(ctx, fn, queuetytype.MachineInput{MachineID: id, StateName: stateName, State: l.st.ToMap(), Event: ev,
		EventPayload: evPay.ToMap(), Payload: l.sd.action.payload.ToMap()})
	if aerr != nil {
		return r.failAction(ctx, run, aerr, final)
	}
	res, err := object(result, "action result")
	if err != nil {
		return r.failAction(ctx, run, err, final)
	}
	if result != nil {
		res = sortedObject(result)
	}
	var rejected error
	err = r.Store.InTx(ctx, func(tx driver.Tx) error {
		rejected = nil
		rej, err := r.applyAction(ctx, tx, run, res, h)
		if err != nil {
			return err
		}
		if rej != nil {
			rejected = rej
			return rej // roll back everything the attempt wrote
		}
		return nil
	})
	if rejected != nil {
		return r.failAction(ctx, run, rejected, final)
	}
	if err != nil {
		return fmt.Errorf("queuety: state machine %d action %q: %w", id, run.handler, err)
	}
	return nil
}

// sortedObject is m as an object with its keys in sorted order (a Go map
// has none of its own).
func sortedObject(m map[string]any) *phpjson.Object {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o := phpjson.NewObject()
	for _, k := range keys {
		v, err := phpjson.Normalize(m[k])
		if err != nil {
			v = nil
		}
		o.Set(k, v)
	}
	return o
}

func (r *Runtime) applyAction(ctx context.Context, tx driver.Tx, run *actionRun, res *phpjson.Object, h Handlers) (rej, err error) {
	at := r.now()
	if err := run.job.fence(ctx, tx); err != nil { // the job row before the machine row, as stale recovery locks them
		return nil, err
	}
	l, err := r.lock(ctx, tx, run.id, driver.LockUpdate)
	if err != nil {
		return nil, err
	}
	if cur, err := r.current(ctx, tx, l, run); err != nil || !cur {
		return nil, err // another attempt applied it, or the machine moved on
	}
	actx := obj("action", run.handler, "state", run.stateName, "event", nullable(run.eventName))
	if _, err := insert(ctx, tx, run.id, at, run.startedRow(l.st, actx)); err != nil {
		return nil, err
	}
	st := l.st.Clone()
	updates := phpjson.NewObject()
	transitionPayload := phpjson.NewObject()
	for _, k := range res.Keys() {
		v, _ := res.Get(k)
		if k == "_event_payload" {
			if o, ok := v.(*phpjson.Object); ok {
				transitionPayload = o
			} else if list, ok := v.([]any); ok {
				transitionPayload, _ = asObject(list)
			}
			continue
		}
		if publicKey(k) {
			updates.Set(k, v)
			st.Set(k, v)
		}
	}
	emittedRaw, _ := res.Get("_event")
	ms := time.Since(run.started).Milliseconds()
	if _, err := insert(ctx, tx, run.id, at, row{state: run.stateName, event: string(queuetytype.MachineEventActionCompleted),
		eventName: run.eventName, jobID: run.job.ID, handler: run.handler, queue: run.job.Queue, attempt: &run.job.Attempt,
		input: run.input, output: res, stateBefore: l.st, stateAfter: st, context: actx, durationMS: &ms}); err != nil {
		return nil, err
	}
	_ = emittedRaw
	emitted := ""
	switch x := emittedRaw.(type) {
	case string:
		emitted = strings.TrimSpace(x)
	case int64, float64, bool:
		emitted = strings.TrimSpace(fmt.Sprint(x))
	}
	if emitted != "" {
		if transitionPayload.Len() == 0 {
			transitionPayload = updates
		}
		return r.transition(ctx, tx, at, l, st, emitted, transitionPayload, h)
	}
	l.m.Status, l.m.State, l.m.ErrorMessage, l.m.UpdatedAt = queuetytype.MachineWaitingEvent, encode(st), "", at
	setEnded(l.m, queuetytype.MachineWaitingEvent, at)
	if err := tx.MachineUpdate(ctx, l.m); err != nil {
		return nil, err
	}
	if err := tx.MachineTimerClear(ctx, l.m.ID); err != nil {
		return nil, err
	}
	waiting := &stateDef{name: l.sd.name, transitions: l.sd.transitions, timeoutSecs: l.sd.timeoutSecs, timeoutEvent: l.sd.timeoutEvent}
	return nil, r.entered(ctx, tx, at, l.m, l.def, waiting, "", nil, st, obj("event", nullable(run.eventName)))
}

// startedRow is the action_started row.
func (run *actionRun) startedRow(st *phpjson.Object, actx *phpjson.Object) row {
	var stv any = st
	if st == nil {
		stv = nil
	}
	return row{state: run.stateName, event: string(queuetytype.MachineEventActionStarted), eventName: run.eventName, jobID: run.job.ID,
		handler: run.handler, queue: run.job.Queue, attempt: &run.job.Attempt, input: run.input, output: run.eventPay,
		stateBefore: stv, stateAfter: stv, context: actx}
}

// failAction records a failed attempt (action_started when the action
// ran, then action_failed) and, on the last attempt, fails the machine
// (Queuety PHP's fail_action), then returns cause for the retry policy.
func (r *Runtime) failAction(ctx context.Context, run *actionRun, cause error, final func(error) bool) error {
	last := final != nil && final(cause)
	msg := cause.Error()
	err := r.Store.InTx(ctx, func(tx driver.Tx) error {
		at := r.now()
		if err := run.job.fence(ctx, tx); err != nil {
			return err // a superseded attempt's failure is not recorded
		}
		var before any // PHP writes an empty state as null here
		if run.before != nil && run.before.Len() > 0 {
			before = run.before
		}
		var actx any = []any{}
		if run.input != nil {
			actx = obj("action", run.handler, "state", run.stateName, "event", nullable(run.eventName))
			started := run.startedRow(nil, actx.(*phpjson.Object))
			started.stateBefore, started.stateAfter = before, before
			if _, err := insert(ctx, tx, run.id, at, started); err != nil {
				return err
			}
		}
		var input any
		if run.input != nil {
			input = run.input
		}
		ms := time.Since(run.started).Milliseconds()
		if _, err := insert(ctx, tx, run.id, at, row{state: run.stateName, event: string(queuetytype.MachineEventActionFailed),
			eventName: run.eventName, jobID: run.job.ID, handler: run.handler, queue: run.job.Queue, attempt: &run.job.Attempt,
			input: input, stateBefore: before, stateAfter: before, context: actx, errv: errorPayload(cause), durationMS: &ms}); err != nil {
			return err
		}
		if !last {
			return nil
		}
		l, err := r.lock(ctx, tx, run.id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if cur, err := r.current(ctx, tx, l, run); err != nil || !cur {
			return err // the machine left the entry this job was queued for
		}
		l.m.Status, l.m.CurrentState, l.m.ErrorMessage, l.m.UpdatedAt, l.m.FailedAt = queuetytype.MachineFailed, run.stateName, msg, at, at
		l.m.State = encode(l.st)
		if err := tx.MachineUpdate(ctx, l.m); err != nil {
			return err
		}
		if err := tx.MachineTimerClear(ctx, l.m.ID); err != nil {
			return err
		}
		_, err = insert(ctx, tx, run.id, at, row{state: run.stateName, event: string(queuetytype.MachineEventFailed), jobID: run.job.ID,
			queue: run.job.Queue, attempt: &run.job.Attempt, stateBefore: l.st, stateAfter: l.st, errv: obj("message", msg)})
		return err
	})
	if err != nil {
		return fmt.Errorf("queuety: record state machine %d action failure (%v): %w", run.id, cause, err)
	}
	return cause
}

// FailStale is what stale recovery does when it buries an entry action
// job whose attempts are used up (Queuety PHP's recover_stale calling
// fail_action): in tx, after the job row, it fails the machine with msg
// and writes the action_failed and machine_failed rows PHP writes, with
// the job's id, queue and attempt. A machine that no longer runs the
// entry the job was queued for is left alone; Queuety PHP leaves only
// completed and cancelled machines.
func (r *Runtime) FailStale(ctx context.Context, tx driver.Tx, job *driver.Job, msg string) error {
	meta, err := phpjson.DecodeObject(job.Payload)
	if err != nil || meta == nil {
		return nil // not an action job the runtime can read
	}
	id := num(meta, "machine_id", 0)
	if s, ok := get(meta, "machine_id").(string); ok {
		fmt.Sscan(s, &id)
	}
	stateName := strings.TrimSpace(str(meta, "state_name"))
	if id <= 0 || stateName == "" {
		return nil
	}
	l, err := r.lock(ctx, tx, id, driver.LockUpdate)
	if errors.Is(err, queuetytype.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fail state machine %d of stale action job %d: %w", id, job.ID, err)
	}
	run := &actionRun{job: Job{ID: job.ID, Queue: job.Queue, Attempt: job.Attempts}, id: id, stateName: stateName}
	if cur, err := r.current(ctx, tx, l, run); err != nil || !cur {
		return err
	}
	at := r.now()
	l.m.Status, l.m.CurrentState, l.m.ErrorMessage, l.m.UpdatedAt, l.m.FailedAt = queuetytype.MachineFailed, stateName, msg, at, at
	l.m.State = encode(l.st)
	if err := tx.MachineUpdate(ctx, l.m); err != nil {
		return err
	}
	if err := tx.MachineTimerClear(ctx, l.m.ID); err != nil {
		return err
	}
	for _, ev := range []queuetytype.MachineEventType{queuetytype.MachineEventActionFailed, queuetytype.MachineEventFailed} {
		if _, err := insert(ctx, tx, id, at, row{state: stateName, event: string(ev), jobID: job.ID, queue: job.Queue,
			attempt: &run.job.Attempt, stateBefore: l.st, stateAfter: l.st, errv: obj("message", msg)}); err != nil {
			return err
		}
	}
	return nil
}
