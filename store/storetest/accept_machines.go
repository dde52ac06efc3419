package storetest

// The acceptance cases of state machines: the rows Queuety PHP's
// StateMachine writes, events, guards, entry actions run by workers,
// timeouts, and transitions applied exactly once under concurrent events.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func init() {
	register("Machines/DispatchRows", testMachineDispatchRows)
	register("Machines/Events", testMachineEvents)
	register("Machines/Actions", testMachineActions)
	register("Machines/ActionFailure", testMachineActionFailure)
	register("Machines/ConcurrentEvents", testMachineConcurrentEvents)
	register("Machines/Timeout", testMachineTimeout)
	register("Machines/BadInput", testMachineBadInput)
}

// reviewMachine is the documentation's machine, with Go handler names.
func reviewMachine() *machine.Builder {
	return machine.New("agent_session").
		Version("agent-session.v1").
		State("awaiting_user").On("user_message", "planning").
		State("planning").Action("plan", map[string]any{"depth": 2}).On("planned", "awaiting_review").
		State("awaiting_review").
		On("approve", "completed", machine.Guard("approved", nil)).
		On("reject", "awaiting_user").
		Terminal("completed", queuetytype.MachineCompleted)
}

// timeline returns a machine's events as "event:state[:event_name]".
func (e *Env) timeline(id int64) []string {
	e.T.Helper()
	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(e.T, err, "timeline")
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Event) + ":" + ev.StateName
		if ev.EventName != "" {
			out[i] += ":" + ev.EventName
		}
	}
	return out
}

// testMachineDispatchRows: dispatch writes the machine row, its definition
// (byte for byte what Queuety PHP's builder encodes, with its sha256) and
// the machine_started and machine_waiting rows; an idempotency key returns
// the first machine.
func testMachineDispatchRows(t *testing.T, e *Env) {
	def, err := reviewMachine().Definition()
	require.NoError(t, err)
	id, err := reviewMachine().Dispatch(e.Ctx, e.C, queuety.State{"thread_id": 42})
	require.NoError(t, err)
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, &queuetytype.MachineState{ID: id, Name: "agent_session", Status: queuetytype.MachineWaitingEvent,
		CurrentState: "awaiting_user", State: map[string]any{"thread_id": int64(42)}, AvailableEvents: []string{"user_message"},
		DefinitionVersion: "agent-session.v1", DefinitionHash: def.Hash}, st)

	trace, err := e.C.MachineTrace(e.Ctx, id)
	require.NoError(t, err)
	assert.Contains(t, string(trace), `"definition":{"name":"agent_session","initial_state":"awaiting_user","states":{"awaiting_user":`+
		`{"name":"awaiting_user","action":null,"action_class":null,"terminal_status":null,"transitions":[{"event":"user_message",`+
		`"target_state":"planning","guard":null,"guard_class":null,"name":"user_message"}]},"planning":{"name":"planning",`+
		`"action":{"class":"plan","payload":{"depth":2}},"action_class":"plan","terminal_status":null,"transitions":`+
		`[{"event":"planned","target_state":"awaiting_review","guard":null,"guard_class":null,"name":"planned"}]},`+
		`"awaiting_review":{"name":"awaiting_review","action":null,"action_class":null,"terminal_status":null,"transitions":`+
		`[{"event":"approve","target_state":"completed","guard":{"class":"approved","payload":[]},"guard_class":"approved",`+
		`"name":"approve"},{"event":"reject","target_state":"awaiting_user","guard":null,"guard_class":null,"name":"reject"}]},`+
		`"completed":{"name":"completed","action":null,"action_class":null,"terminal_status":"completed","transitions":[]}},`+
		`"queue":"default","priority":0,"max_attempts":3,"definition_version":"agent-session.v1","definition_hash":"`+def.Hash+`"}`)

	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, queuetytype.MachineEventStarted, evs[0].Event)
	assert.Equal(t, `{"thread_id":42}`, string(evs[0].Input))
	assert.Equal(t, `{"status":"waiting_event"}`, string(evs[0].Output))
	assert.Nil(t, evs[0].StateBefore, "machine_started has no state_before")
	assert.Equal(t, `{"name":"agent_session","initial_state":"awaiting_user","definition_hash":"`+def.Hash+`"}`, string(evs[0].Context))
	assert.Equal(t, queuetytype.MachineEventWaiting, evs[1].Event)
	assert.Equal(t, `{"state":"awaiting_user","event":null}`, string(evs[1].Context))
	assert.Equal(t, Epoch, evs[1].CreatedAt)

	again, err := reviewMachine().IdempotencyKey("thread-42").Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	dup, err := reviewMachine().IdempotencyKey("thread-42").Dispatch(e.Ctx, e.C, queuety.State{"other": true})
	require.NoError(t, err)
	assert.Equal(t, again, dup, "same key, same machine")
	assert.NotEqual(t, id, again)
	list, err := e.C.ListMachines(e.Ctx, queuetytype.MachineFilter{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "thread-42", list[0].IdempotencyKey, "newest first")
	assert.Equal(t, []string{"user_message"}, list[0].AvailableEvents)
}

// testMachineEvents: events merge their public keys into the state and
// move the machine; an event the state does not accept, an event while the
// machine is not waiting and a guard that refuses are rejected and
// recorded; a guard that allows completes the machine.
func testMachineEvents(t *testing.T, e *Env) {
	guards := queuety.NewRegistry()
	allowed := false
	guards.HandleMachineGuard("approved", func(_ context.Context, in queuetytype.MachineInput) (bool, error) {
		if in.EventPayload["boom"] == true {
			return false, errors.New("guard exploded")
		}
		return allowed && in.State["reviewer"] != nil, nil
	})
	c := e.Client(queuety.WithRegistry(guards))
	def := machine.New("review").
		State("draft").On("submit", "review").
		State("review").On("approve", "done", machine.Guard("approved", nil)).On("reject", "draft", machine.Named("send back")).
		Terminal("done", queuetytype.MachineCompleted)
	id, err := def.Dispatch(e.Ctx, c, nil)
	require.NoError(t, err)

	err = c.MachineEvent(e.Ctx, id, "approve", nil)
	require.ErrorIs(t, err, queuetytype.ErrEventRejected)
	assert.Contains(t, err.Error(), "State 'draft' does not allow event 'approve'.")
	require.NoError(t, c.MachineEvent(e.Ctx, id, "submit", queuety.State{"reviewer": "ed", "_private": 1}))
	st, err := c.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "review", st.CurrentState)
	assert.Equal(t, map[string]any{"reviewer": "ed"}, st.State, "keys starting with _ are not merged")
	assert.Equal(t, []string{"approve", "reject"}, st.AvailableEvents)

	require.ErrorIs(t, c.MachineEvent(e.Ctx, id, "approve", nil), queuetytype.ErrEventRejected, "guard refuses")
	require.ErrorContains(t, c.MachineEvent(e.Ctx, id, "approve", queuety.State{"boom": true}), "guard exploded")
	require.ErrorContains(t, e.C.MachineEvent(e.Ctx, id, "approve", nil), "State guard class 'approved' could not be loaded.",
		"a client without the guard")
	allowed = true
	require.NoError(t, c.MachineEvent(e.Ctx, id, "approve", nil))
	st, err = c.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineCompleted, st.Status)
	assert.Equal(t, []string{}, st.AvailableEvents)
	assert.Equal(t, queuetytype.MachineCompleted, st.TerminalStatus)
	err = c.MachineEvent(e.Ctx, id, "submit", nil)
	require.ErrorIs(t, err, queuetytype.ErrEventRejected)
	assert.Contains(t, err.Error(), fmt.Sprintf("State machine %d is not waiting for external events; current status is 'completed'.", id))
	require.ErrorIs(t, c.MachineEvent(e.Ctx, 999999, "submit", nil), queuetytype.ErrNotFound)

	assert.Equal(t, []string{
		"machine_started:draft", "machine_waiting:draft",
		"event_received:draft:approve", "event_rejected:draft:approve",
		"event_received:draft:submit", "transitioned:draft:submit", "machine_waiting:review:submit",
		"event_received:review:approve", "guard_started:review:approve", "guard_completed:review:approve", "event_rejected:review:approve",
		"event_received:review:approve", "guard_started:review:approve", "guard_failed:review:approve", "event_rejected:review:approve",
		"event_received:review:approve", "event_rejected:review:approve",
		"event_received:review:approve", "guard_started:review:approve", "guard_completed:review:approve",
		"transitioned:review:approve", "machine_completed:done:approve",
		"event_rejected:done:submit",
	}, e.timeline(id))

	evs, err := c.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(t, err)
	rej := evs[3]
	assert.Equal(t, `{"rejected":true,"message":"State 'draft' does not allow event 'approve'."}`, string(rej.Output))
	assert.Equal(t, `{"message":"State 'draft' does not allow event 'approve'.","class":"RuntimeException","trace":""}`, string(rej.Error))
	assert.Equal(t, `[]`, string(rej.StateAfter), "an empty state is written as PHP writes an empty array")
	tr := evs[5]
	assert.Equal(t, `{"from":"draft","to":"review","name":"submit","event":"submit"}`, string(tr.Output))
	assert.Equal(t, `{"_private":1,"reviewer":"ed"}`, string(tr.Input))
	at, err := c.MachineStateAt(e.Ctx, id, evs[4].ID)
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"reviewer": "ed"}, at)
	page, err := c.MachineTimeline(e.Ctx, id, 2, 3)
	require.NoError(t, err)
	require.Len(t, page, 2)
	assert.Equal(t, evs[3].ID, page[0].ID, "offset")
}

// testMachineActions: entering a state with an action enqueues its job
// (the payload Queuety PHP writes); a worker runs the action, merges its
// keys and applies the event it emits, with the guards of its registry.
func testMachineActions(t *testing.T, e *Env) {
	w := e.Worker(nil)
	var inputs []queuetytype.MachineInput
	w.Registry().HandleMachineAction("plan", func(_ context.Context, in queuetytype.MachineInput) (queuety.State, error) {
		inputs = append(inputs, in)
		return queuety.State{"plan": "steps", "_event": "planned"}, nil
	})
	w.Registry().HandleMachineGuard("approved", func(context.Context, queuetytype.MachineInput) (bool, error) { return true, nil })
	id, err := reviewMachine().Dispatch(e.Ctx, e.C, queuety.State{"thread_id": 42})
	require.NoError(t, err)
	require.NoError(t, e.C.MachineEvent(e.Ctx, id, "user_message", queuety.State{"message": "hi"}))
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineRunning, st.Status)
	assert.Equal(t, "plan", st.CurrentAction)
	require.ErrorIs(t, e.C.MachineEvent(e.Ctx, id, "planned", nil), queuetytype.ErrEventRejected, "not waiting while the action runs")

	jobs, err := e.C.ListJobs(e.Ctx, queuetytype.JobFilter{Handler: "__queuety_state_machine_action"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, fmt.Sprintf(`{"machine_id":%d,"state_name":"planning","event_name":"user_message","event_payload":{"message":"hi"}}`, id),
		string(jobs[0].Payload))
	e.Drain(w)
	require.Len(t, inputs, 1)
	assert.Equal(t, queuetytype.MachineInput{MachineID: id, StateName: "planning", State: map[string]any{"thread_id": int64(42), "message": "hi"},
		Event: "user_message", EventPayload: map[string]any{"message": "hi"}, Payload: map[string]any{"depth": int64(2)}}, inputs[0])
	st, err = e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "awaiting_review", st.CurrentState)
	assert.Equal(t, queuetytype.MachineWaitingEvent, st.Status)
	assert.Equal(t, "steps", st.State["plan"])
	assert.Equal(t, queuetytype.JobCompleted, e.Job(jobs[0].ID).Status)
	assert.Equal(t, []string{
		"machine_started:awaiting_user", "machine_waiting:awaiting_user",
		"event_received:awaiting_user:user_message", "transitioned:awaiting_user:user_message", "action_enqueued:planning:user_message",
		"event_rejected:planning:planned",
		"action_started:planning:user_message", "action_completed:planning:user_message", "transitioned:planning:planned",
		"machine_waiting:awaiting_review:planned",
	}, e.timeline(id))
	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"job_id":%d,"handler":"plan","queue":"default","priority":0}`, jobs[0].ID), string(evs[4].Output))
	assert.Equal(t, `{"_event":"planned","plan":"steps"}`, string(evs[7].Output), "a Go map's keys in sorted order")
	assert.Equal(t, jobs[0].ID, evs[7].JobID)
	assert.Equal(t, `{"plan":"steps"}`, string(evs[8].Input), "the merged keys are the emitted event's payload")
}

// testMachineActionFailure: a failing action records action_started and
// action_failed per attempt and fails the machine after the last one; an
// action no worker registered fails the same way.
func testMachineActionFailure(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.Registry().HandleMachineAction("flaky", func(context.Context, queuetytype.MachineInput) (queuety.State, error) {
		return nil, errors.New("provider down")
	})
	id, err := machine.New("f").State("go").Action("flaky", nil).On("ok", "end").Terminal("end", queuetytype.MachineCompleted).
		MaxAttempts(2).Dispatch(e.Ctx, e.C, queuety.State{"n": 1})
	require.NoError(t, err)
	for range 2 {
		e.Drain(w)
		e.Clock.Advance(time.Hour) // past the retry backoff
	}
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineFailed, st.Status)
	assert.Equal(t, "provider down", st.ErrorMessage)
	assert.Equal(t, []string{"machine_started:go", "action_enqueued:go",
		"action_started:go", "action_failed:go", "action_started:go", "action_failed:go", "machine_failed:go"}, e.timeline(id))
	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"message":"provider down"}`, string(evs[6].Error))
	require.NotNil(t, evs[5].Attempt)
	assert.Equal(t, 2, *evs[5].Attempt)

	other, err := machine.New("g").State("go").Action("nobody", nil).Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	for range 3 {
		e.Drain(w)
		e.Clock.Advance(time.Hour)
	}
	st, err = e.C.MachineStatus(e.Ctx, other)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineFailed, st.Status)
	assert.Equal(t, "State action class 'nobody' could not be loaded.", st.ErrorMessage)
}

// testMachineConcurrentEvents: events sent at once from several clients
// (each its own connections, as separate workers would be) apply one at a
// time, each exactly once: a self-loop counts every event, and of racing
// events that end the machine exactly one wins.
func testMachineConcurrentEvents(t *testing.T, e *Env) {
	const clients, each = 6, 5
	cs := e.Clients(clients)
	id, err := machine.New("counter").State("open").On("tick", "open").On("close", "closed").
		Terminal("closed", queuetytype.MachineCompleted).Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				errs <- c.MachineEvent(e.Ctx, id, "tick", queuety.State{fmt.Sprintf("c%d", i): j})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	count := func(kind string) int {
		n := 0
		for _, ev := range e.timeline(id) {
			if ev == kind {
				n++
			}
		}
		return n
	}
	assert.Equal(t, clients*each, count("transitioned:open:tick"), "every event applied once")
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	for i := range clients {
		assert.Equal(t, int64(each-1), st.State[fmt.Sprintf("c%d", i)], "each client's last event is in the state")
	}

	won := make(chan error, clients)
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); won <- c.MachineEvent(e.Ctx, id, "close", nil) }()
	}
	wg.Wait()
	close(won)
	ok := 0
	for err := range won {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, queuetytype.ErrEventRejected)
		}
	}
	assert.Equal(t, 1, ok, "exactly one close applied")
	assert.Equal(t, 1, count("transitioned:open:close"))
	assert.Equal(t, 1, count("machine_completed:closed:close"))
	assert.Equal(t, clients-1, count("event_rejected:closed:close"))
}

// testMachineTimeout: a waiting state's timeout fires its event once when
// due, whatever the number of sweepers; an event before it disarms it.
func testMachineTimeout(t *testing.T, e *Env) {
	b := func() *machine.Builder {
		return machine.New("t").State("waiting").Timeout(30*time.Second, "expire").On("expire", "expired").On("answer", "answered").
			Terminal("expired", queuetytype.MachineCancelled).Terminal("answered", queuetytype.MachineCompleted)
	}
	id, err := b().Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	answered, err := b().Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	require.NoError(t, e.C.MachineEvent(e.Ctx, answered, "answer", nil))

	n, err := e.C.FireMachineTimeouts(e.Ctx, nil, 10)
	require.NoError(t, err)
	assert.Zero(t, n, "not due yet")
	e.Clock.Advance(31 * time.Second)
	cs := e.Clients(4)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := c.FireMachineTimeouts(e.Ctx, nil, 10); assert.NoError(t, err) }()
	}
	wg.Wait()
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineCancelled, st.Status)
	assert.Equal(t, []string{"machine_started:waiting", "machine_waiting:waiting", "event_received:waiting:expire",
		"transitioned:waiting:expire", "machine_cancelled:expired:expire"}, e.timeline(id), "fired once")
	st, err = e.C.MachineStatus(e.Ctx, answered)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineCompleted, st.Status, "answered before the timeout")

	swept, err := b().Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	e.Clock.Advance(31 * time.Second)
	e.Drain(e.Worker(nil)) // a worker's sweeps fire it
	st, err = e.C.MachineStatus(e.Ctx, swept)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineCancelled, st.Status, "fired by a worker's sweep")
}

// testMachineBadInput: definitions Queuety PHP's builder refuses are
// refused with ErrInvalidArgument, before anything is written.
func testMachineBadInput(t *testing.T, e *Env) {
	cases := map[string]*machine.Builder{
		"no states":       machine.New("x"),
		"missing target":  machine.New("x").State("a").On("go", "b"),
		"terminal action": machine.New("x").Terminal("a", queuetytype.MachineCompleted).Action("act", nil),
		"bad terminal":    machine.New("x").Terminal("a", queuetytype.MachineRunning),
		"on before state": machine.New("x").On("go", "a").State("a"),
		"empty event":     machine.New("x").State("a").On(" ", "a"),
		"zero attempts":   machine.New("x").State("a").MaxAttempts(0),
		"short timeout":   machine.New("x").State("a").Timeout(time.Millisecond, "go").On("go", "a"),
		"timeout event":   machine.New("x").State("a").Timeout(time.Minute, "nope"),
		"missing initial": machine.New("x").Initial("b").State("a"),
	}
	for name, b := range cases {
		_, err := b.Dispatch(e.Ctx, e.C, nil)
		require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, name)
	}
	_, err := machine.New("x").State("a").Dispatch(e.Ctx, e.C, "not an object")
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "initial state")
	id, err := machine.New("x").State("a").On("go", "a").Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	require.ErrorIs(t, e.C.MachineEvent(e.Ctx, id, " ", nil), queuetytype.ErrInvalidArgument, "empty event")
	require.ErrorIs(t, e.C.MachineEvent(e.Ctx, id, "go", 12), queuetytype.ErrInvalidArgument, "payload")
	list, err := e.C.ListMachines(e.Ctx, queuetytype.MachineFilter{})
	require.NoError(t, err)
	assert.Len(t, list, 1, "only the valid machine was written")
}
