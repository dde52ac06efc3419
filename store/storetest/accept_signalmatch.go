package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func init() {
	register("Signals/CorrelationKey", testSignalCorrelation)
	register("Signals/MatchPayload", testSignalMatchPayload)
}

// testSignalCorrelation: one signal name serves two workflows, each
// settled only by the signal carrying its own order_id; a non-matching
// signal sent before the wait is reached is skipped for the matching one.
func testSignalCorrelation(t *testing.T, e *Env) {
	paid := func() *builder.Builder {
		return builder.Workflow("order").Then("prepare").
			WaitForSignal("paid", builder.CorrelationKey("order_id"), builder.ResultKey("payment")).Then("next")
	}
	seven, eight := e.startB(paid(), queuety.State{"order_id": 7}), e.startB(paid(), queuety.State{"order_id": 8})
	// Before workflow 8 reaches its wait: a signal for another order, one
	// without the key, then its own.
	require.NoError(t, e.C.Signal(e.Ctx, eight, "paid", queuety.State{"order_id": 9, "amount": 1}))
	require.NoError(t, e.C.Signal(e.Ctx, eight, "paid", queuety.State{"amount": 2}))
	require.NoError(t, e.C.Signal(e.Ctx, eight, "paid", queuety.State{"order_id": 8, "amount": 3}))
	var got sync.Map
	w := e.Worker(nil)
	w.HandleStep("prepare", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleStep("next", recordState(&got))
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(seven).Status, "7 waits")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(eight).Status, "8 settled by the signal sent before its wait")
	st, _ := got.Load(eight)
	assert.Equal(t, map[string]any{"order_id": int64(8), "amount": int64(3)}, st.(queuety.State)["payment"], "8: the matching payload")

	for _, p := range []queuety.State{{"order_id": 8}, {"order_id": "7"}, {"amount": 1}} {
		require.NoError(t, e.C.Signal(e.Ctx, seven, "paid", p))
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(seven).Status, "7 ignores %v", p)
	}
	require.NoError(t, e.C.Signal(e.Ctx, seven, "paid", queuety.State{"order_id": 7, "amount": 4}))
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(seven).Status, "7 settled by its own order_id")
	e.Drain(w)
	st, _ = got.Load(seven)
	assert.Equal(t, map[string]any{"order_id": int64(7), "amount": int64(4)}, st.(queuety.State)["payment"], "7: the matching payload")

	v, _ := e.rawState(seven).Get("_steps")
	assert.Contains(t, string(mustMarshal(t, v)),
		`"name":"wait_for_paid","signal_name":"paid","signal_names":["paid"],"wait_mode":"all","result_key":"payment","match_payload":[],"correlation_key":"order_id","human_wait":null`,
		"encoded as Queuety's wait_for_signal(correlation_key:)")
}

// testSignalMatchPayload: a wait counts only signals whose payload
// contains the subset, nested objects compared key by key; a decision
// matches on its reject signal too.
func testSignalMatchPayload(t *testing.T, e *Env) {
	review := e.startB(builder.Workflow("review").
		WaitForSignal("reviewed", builder.MatchPayload(queuety.State{"verdict": "ok", "by": map[string]any{"team": "legal"}})).Then("next"), nil)
	decision := e.startB(builder.Workflow("decide").
		WaitForDecision(builder.MatchPayload(queuety.State{"level": 2})).Then("next"), nil)
	var got sync.Map
	w := e.Worker(nil)
	w.HandleStep("next", recordState(&got))
	e.Drain(w)
	for _, p := range []queuety.State{
		{"verdict": "no", "by": map[string]any{"team": "legal"}},
		{"verdict": "ok", "by": map[string]any{"team": "sales"}},
		{"verdict": "ok"},
		{"verdict": "ok", "by": "legal"},
	} {
		require.NoError(t, e.C.Signal(e.Ctx, review, "reviewed", p))
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(review).Status, "review ignores %v", p)
	}
	require.NoError(t, e.C.Signal(e.Ctx, review, "reviewed", queuety.State{"verdict": "ok", "by": map[string]any{"team": "legal", "name": "ada"}, "note": "fine"}))
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(review).Status, "review settled by a superset")

	_, err := e.C.Reject(e.Ctx, decision, queuety.State{"level": 1})
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(decision).Status, "decision ignores level 1")
	_, err = e.C.Reject(e.Ctx, decision, queuety.State{"level": 2})
	require.NoError(t, err)
	e.Drain(w)
	st, _ := got.Load(review)
	assert.Equal(t, queuety.State{"verdict": "ok", "by": map[string]any{"team": "legal", "name": "ada"}, "note": "fine"}, st, "review: the matching payload merged")
	st, _ = got.Load(decision)
	assert.Equal(t, "rejected", st.(queuety.State)["decision"].(map[string]any)["outcome"], "decision outcome")

	v, _ := e.rawState(review).Get("_steps")
	assert.Contains(t, string(mustMarshal(t, v)),
		`"match_payload":{"by":{"team":"legal"},"verdict":"ok"},"correlation_key":null`,
		"encoded as Queuety's wait_for_signal(match_payload:), keys sorted")
}
