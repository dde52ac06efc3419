package advance

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// chainState is a three-step workflow's state with a public part worth
// encoding, pruning bookkeeping and a compensation, so that a transition
// changes nested private values too.
const chainState = `{"order":{"id":7,"lines":[{"sku":"a","qty":2},{"sku":"b","qty":1}]},"note":"x",
	"_queue":"q","_prune_state_after":5,"_step_outputs":{"0":["seed"]},"_steps":[
	{"type":"single","class":"A","compensation":"UndoA"},{"type":"single","class":"B"},{"type":"single","class":"C"}]}`

// finalizeStep runs the transition of step idx of wf from state, as the
// engine's batch does, with the public state before it when known.
func finalizeStep(t *testing.T, s *Service, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, public []byte, output *phpjson.Object) *Writes {
	t.Helper()
	idx := wf.CurrentStep
	job := &driver.Job{ID: int64(100 + idx), WorkflowID: wf.ID, StepIndex: &idx, Handler: steps[idx].Class, Attempts: 1}
	w := &Writes{}
	l := Locked{Workflow: wf, Job: job, State: state, Steps: steps, Now: now, PublicJSON: public}
	require.NoError(t, s.FinalizeInto(w, l, &fakeAttempt{job: job}, output))
	return w
}

// A step handed off by the transition before it starts from that
// transition's encoding of the public state: its events' state_before
// and input are exactly the bytes the previous step_completed stored as
// state_after, which are the encoding of the state the workflow row
// holds, after every change the transitions made (merged output,
// pruning, compensation stack). The payload tree the transition keeps
// for the next job is the one its payload decodes to.
func TestHandedOffStepReusesEncodedState(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, chainState)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	wf := &driver.Workflow{ID: 5, Status: driver.WorkflowRunning, TotalSteps: 3}

	var public []byte
	var prevAfter []byte
	for step := range 3 {
		out := phpjson.NewObject()
		out.Set("note", "after step "+string(rune('0'+step)))
		out.Set("lines", []any{int64(step), 0.5})
		claimed := state // the claim's copy, shared and read-only
		claimedJSON := string(workflowstate.EncodeJSON(claimed))
		state = state.Shallow()
		w := finalizeStep(t, s, wf, state, steps, public, out)
		assert.Equal(t, claimedJSON, string(workflowstate.EncodeJSON(claimed)), "step %d: the claim's state is left as it was", step)

		require.Len(t, w.events, 2)
		started, completed := w.events[0], w.events[1]
		if prevAfter != nil {
			assert.Equal(t, string(prevAfter), string(started.StateBefore), "step %d: state_before is the previous state_after", step)
			assert.Equal(t, string(prevAfter), string(completed.Input), "step %d: input is the previous state_after", step)
		}
		fresh := workflowstate.EncodeJSON(workflowstate.PublicState(state))
		assert.Equal(t, string(fresh), string(completed.StateAfter), "step %d: state_after encodes the state as changed", step)
		assert.Equal(t, string(fresh), string(w.PublicStateAfter()), "step %d: the encoding handed on is never stale", step)
		row, err := workflowstate.DecodeObject("row", wf.State)
		require.NoError(t, err)
		assert.Equal(t, string(fresh), string(workflowstate.EncodeJSON(workflowstate.PublicState(row))), "step %d: the row holds the same public state", step)

		for _, j := range w.Jobs() {
			doc := w.PayloadDoc(j)
			require.NotNil(t, doc, "step %d: the next job's payload tree is kept", step)
			decoded, err := workflowstate.DecodeObject("payload", j.Payload)
			require.NoError(t, err)
			assert.Equal(t, decoded, doc, "step %d: the kept payload is what the row's payload decodes to", step)
		}
		public, prevAfter = w.PublicStateAfter(), completed.StateAfter
	}
	assert.Equal(t, driver.WorkflowCompleted, wf.Status)
}

// A transition given the previous transition's encoding of the public
// state uses those bytes as they are, for the started event's
// state_before and the completed event's input, instead of encoding the
// state again. The encoding handed in here differs from the state's own
// (a space before the closing brace), so bytes taken from it cannot come
// from an encoding of the state.
func TestHandedOffStepEncodesStateOnce(t *testing.T) {
	s := service(&fakeCore{})
	base := decode(t, chainState)
	steps, err := workflowdef.Parse(base)
	require.NoError(t, err)
	public := workflowstate.EncodeJSON(workflowstate.PublicState(base))
	require.True(t, bytes.HasSuffix(public, []byte("}")))
	known := append(bytes.Clone(public[:len(public)-1]), " }"...)
	out := phpjson.NewObject()
	out.Set("done", true)
	run := func(known []byte) (stateBefore, input string) {
		wf := &driver.Workflow{ID: 5, Status: driver.WorkflowRunning, TotalSteps: 3}
		idx := 0
		job := &driver.Job{ID: 100, WorkflowID: 5, StepIndex: &idx, Handler: "A", Attempts: 1}
		w := &Writes{}
		l := Locked{Workflow: wf, Job: job, State: base.Shallow(), Steps: steps, Now: now, PublicJSON: known}
		require.NoError(t, s.FinalizeInto(w, l, &fakeAttempt{job: job}, out))
		require.Len(t, w.events, 2)
		return string(w.events[0].StateBefore), string(w.events[1].Input)
	}
	before, input := run(nil)
	assert.Equal(t, string(public), before, "without an encoding given: state_before encodes the state")
	assert.Equal(t, string(public), input, "without an encoding given: input encodes the state")
	before, input = run(known)
	assert.Equal(t, string(known), before, "state_before is the encoding given, not encoded again")
	assert.Equal(t, string(known), input, "input is the encoding given, not encoded again")
}
