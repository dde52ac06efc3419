package workflowdef_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func encodeJSON(t *testing.T, s *workflowdef.Spec) string {
	t.Helper()
	b, err := phpjson.Marshal(workflowdef.Encode(s))
	require.NoError(t, err)
	return string(b)
}

// Encode writes each step type's keys in the order Queuety's
// WorkflowBuilder::build_steps writes them, nulls included.
func TestEncodeShapes(t *testing.T) {
	opts := phpjson.NewObject()
	opts.Set("queue", "fast")
	for _, tc := range []struct {
		spec workflowdef.Spec
		want string
	}{
		{workflowdef.Spec{Type: queuetytype.StepSingle, Name: "0", Handler: "a", Options: opts},
			`{"type":"single","name":"0","class":"a","queue":"fast"}`},
		{workflowdef.Spec{Type: queuetytype.StepParallel, Name: "1", Handlers: []string{"a", "b"}, Compensation: "undo"},
			`{"type":"parallel","name":"1","handlers":["a","b"],"compensation":"undo"}`},
		{workflowdef.Spec{Type: queuetytype.StepDelay, Name: "delay_0", Delay: 1500 * time.Millisecond},
			`{"type":"delay","name":"delay_0","delay_seconds":2,"compensation":null}`},
		{workflowdef.Spec{Type: queuetytype.StepWaitForSignal, Name: "wait_for_decision", Signals: []string{"yes", "no"}, HumanWait: "decision", Timeout: time.Minute},
			`{"type":"wait_for_signal","name":"wait_for_decision","signal_name":"yes","signal_names":["yes","no"],"wait_mode":"all","result_key":null,` +
				`"match_payload":[],"correlation_key":null,"human_wait":"decision","decision_map":{"yes":"approved","no":"rejected"},"compensation":null,"timeout_ms":60000}`},
		{workflowdef.Spec{Type: queuetytype.StepForEach, Name: "2", ItemsKey: "items", Handler: "each", Mode: queuetytype.ForEachQuorum, Quorum: 2},
			`{"type":"for_each","name":"2","items_key":"items","class":"each","result_key":null,"mode":"quorum","quorum":2,"reducer_class":null,"compensation":null}`},
		{workflowdef.Spec{Type: queuetytype.StepRepeat, Name: "repeat_until_3", RepeatMode: workflowdef.RepeatUntil, Target: "0", StateKey: "done", Expected: true},
			`{"type":"repeat","name":"repeat_until_3","repeat_mode":"until","target_step":"0","state_key":"done","expected":true,"condition_class":null,"max_iterations":null,"compensation":null}`},
		{workflowdef.Spec{Type: queuetytype.StepRunWorkflow, Name: "4", Child: &workflowdef.Child{Name: "child", Steps: []any{}}},
			`{"type":"run_workflow","name":"4","workflow_name":"child","workflow_steps":[],"workflow_queue":"default","workflow_priority":0,"workflow_max_attempts":3,"compensation":null}`},
		{workflowdef.Spec{Type: queuetytype.StepWaitForWorkflows, Name: "wait_for_workflows_5", WorkflowIDs: []int64{7}, Mode: queuetytype.WaitAny},
			`{"type":"wait_for_workflows","name":"wait_for_workflows_5","workflow_ids":[7],"workflow_id_key":null,"workflow_group_key":null,"wait_mode":"any","quorum":null,"result_key":null,"compensation":null}`},
	} {
		t.Run(string(tc.spec.Type), func(t *testing.T) {
			assert.Equal(t, tc.want, encodeJSON(t, &tc.spec))
		})
	}
}

// What Encode writes, Parse reads back with the same meaning.
func TestParseReadsWhatEncodeWrites(t *testing.T) {
	state := phpjson.NewObject()
	state.Set("_steps", []any{
		workflowdef.Encode(&workflowdef.Spec{Type: queuetytype.StepSingle, Name: "fetch", Handler: "fetch"}),
		workflowdef.Encode(&workflowdef.Spec{Type: queuetytype.StepParallel, Name: "1", Handlers: []string{"a", "b"}}),
		workflowdef.Encode(&workflowdef.Spec{Type: queuetytype.StepWaitForSignal, Name: "w", Signals: []string{"go"}, Timeout: time.Second}),
		workflowdef.Encode(&workflowdef.Spec{Type: queuetytype.StepForEach, Name: "each", ItemsKey: "xs", Handler: "h", Mode: queuetytype.ForEachAll, Reducer: "sum"}),
		workflowdef.Encode(&workflowdef.Spec{Type: queuetytype.StepRepeat, Name: "r", RepeatMode: workflowdef.RepeatWhile, Target: "fetch", Condition: "more", MaxIterations: 4}),
	})
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	require.Len(t, steps, 5)

	assert.Equal(t, queuetytype.StepSingle, steps[0].Type)
	assert.Equal(t, []string{"fetch"}, steps[0].Handlers())
	assert.Equal(t, []string{"a", "b"}, steps[1].Handlers())
	assert.Equal(t, []string{"go"}, steps[2].SignalNames)
	assert.Equal(t, queuetytype.WaitAll, steps[2].WaitMode)
	assert.Equal(t, time.Second, steps[2].Timeout)
	assert.Equal(t, []string{workflowdef.HandlerWaitForSignal}, steps[2].Handlers())
	assert.Equal(t, "sum", steps[3].Reducer)
	assert.Equal(t, "each_results", steps[3].ForEachResultKey())
	assert.Equal(t, []string{workflowdef.HandlerForEach, "h"}, steps[3].Handlers())
	assert.Equal(t, workflowdef.RepeatWhile, steps[4].RepeatMode)
	assert.Equal(t, "more", steps[4].Condition)
	assert.Equal(t, 4, steps[4].MaxIterations)
}

// Parse takes the forms Queuety PHP writes or still accepts: a bare class
// string, an index-keyed object, branches as objects or strings, handler
// definitions as objects, and missing keys with their defaults.
func TestParseLegacyForms(t *testing.T) {
	raw, err := phpjson.DecodeObject([]byte(`{"_steps":{"0":"LegacyHandler",` +
		`"1":{"type":"parallel","branches":["a",{"handler":"b","payload":{"x":1}}," "]},` +
		`"2":{"type":"for_each","class":"h","items_key":"xs","reducer":{"class":"Sum","payload":[]}},` +
		`"3":{"type":"repeat","target_step":"0","condition":"  More  "},` +
		`"4":{"class":"Plain"}}}`))
	require.NoError(t, err)
	steps, err := workflowdef.Parse(raw)
	require.NoError(t, err)
	require.Len(t, steps, 5)
	assert.Equal(t, "0", steps[0].Name)
	assert.Equal(t, "LegacyHandler", steps[0].Class)
	assert.Equal(t, []string{"a", "b"}, steps[1].Handlers(), "blank branches are dropped")
	assert.Equal(t, queuetytype.ForEachAll, steps[2].Mode)
	assert.Equal(t, "Sum", steps[2].Reducer)
	assert.Equal(t, workflowdef.RepeatWhile, steps[3].RepeatMode)
	assert.Equal(t, "More", steps[3].Condition)
	assert.Equal(t, queuetytype.StepSingle, steps[4].Type)
	assert.Equal(t, "4", steps[4].Name)

	_, err = workflowdef.ParseStep(phpjson.NewObject(), 0)
	assert.EqualError(t, err, "single step has no class")
	bad := phpjson.NewObject()
	bad.Set("type", "for_each")
	bad.Set("mode", "most")
	_, err = workflowdef.ParseStep(bad, 2)
	assert.EqualError(t, err, `for_each step "2" has unknown mode "most"`)
}

// The public constants spell the format's values.
func TestPublicConstantsMatchTheFormat(t *testing.T) {
	assert.Equal(t, workflowdef.RepeatWhile, queuety.RepeatWhile)
	assert.Equal(t, workflowdef.RepeatUntil, queuety.RepeatUntil)
	assert.Equal(t, workflowdef.DefaultStartedWorkflowsKey, queuety.DefaultStartedWorkflowsKey)
	assert.Equal(t, workflowdef.DefaultPayloadKey, queuety.DefaultPayloadKey)
}

func TestJobOptionsSet(t *testing.T) {
	assert.False(t, workflowdef.JobOptionsSet(queuetytype.JobSpec{}))
	assert.True(t, workflowdef.JobOptionsSet(queuetytype.JobSpec{Queue: "q"}))
	assert.True(t, workflowdef.JobOptionsSet(queuetytype.JobSpec{PrioritySet: true}))
	assert.True(t, workflowdef.JobOptionsSet(queuetytype.JobSpec{Timeouts: queuetytype.ActivityTimeouts{StartToClose: time.Second}}))
}
