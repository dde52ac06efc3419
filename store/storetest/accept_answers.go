package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Signals/AnswersGoOnlyToAWaitThatTakesThem", testAnswersNeedTheirWait)
	register("Signals/AnswerSubmittedTwiceIsStoredOnce", testAnswerTwice)
}

// signalNames lists the signals stored for a workflow, in order.
func (e *Env) signalNames(id int64) []string {
	e.T.Helper()
	var sigs []*driver.Signal
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { sigs, err = tx.SignalList(e.Ctx, id, nil); return err })
	require.NoErrorf(e.T, err, "signals of workflow %d", id)
	var out []string
	for _, s := range sigs {
		out = append(out, s.Name)
	}
	return out
}

// testAnswersNeedTheirWait: approve, reject and input are answers to the
// wait a workflow is in. One the wait cannot consume (a reject for an
// approval wait, an approve for a plain signal wait, any answer to a
// workflow that is not waiting) is refused and stores nothing; the
// description lists the answers each wait takes.
func testAnswersNeedTheirWait(t *testing.T, e *Env) {
	approval := e.startB(builder.Workflow("a").WaitForApproval().Then("next"), nil)
	decision := e.startB(builder.Workflow("d").WaitForDecision().Then("next"), nil)
	input := e.startB(builder.Workflow("i").WaitForInput().Then("next"), nil)
	plain := e.startB(builder.Workflow("p").WaitForSignal("go").Then("next"), nil)
	// A plain wait for Queuety's default signals takes the answers that send them.
	defaults := e.startB(builder.Workflow("p2").WaitForSignals([]string{"approval", "rejected"}, builder.Any()).Then("next"), nil)
	busy := e.startB(builder.Workflow("b").Then("first").WaitForApproval().Then("next"), nil)
	w := e.Worker(nil)
	w.HandleStep("next", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w) // busy's first step has no handler here: it stays pending

	answers := map[int64][]string{approval: {"approve"}, decision: {"approve", "reject"}, input: {"input"}, plain: nil,
		defaults: {"approve", "reject"}}
	for id, want := range answers {
		d := e.describe(id)
		require.NotNilf(t, d.Wait, "workflow %d waits", id)
		assert.Equalf(t, want, d.Wait.Answers, "workflow %d: the answers its wait takes", id)
	}
	assert.Nil(t, e.describe(busy).Wait, "a workflow that is not waiting has no wait")

	refused := []struct {
		name string
		id   int64
		fn   func(context.Context, int64, any) (string, error)
		want string
	}{
		{"reject an approval wait", approval, e.C.Reject, "only a decision wait can be rejected"},
		{"input to an approval wait", approval, e.C.SubmitInput, `waits for approval (signal "approval"), which takes no input answer (it takes: approve)`},
		{"approve a plain wait", plain, e.C.Approve, `waits for signal "go", which takes no approve answer: send its signal by name`},
		{"reject a plain wait", plain, e.C.Reject, "which takes no reject answer"},
		{"approve an input wait", input, e.C.Approve, "(it takes: input)"},
		{"approve a workflow that is not waiting", busy, e.C.Approve, "is not waiting for an answer (it is running)"},
	}
	for _, r := range refused {
		_, err := r.fn(e.Ctx, r.id, queuety.State{"by": "ops"})
		require.ErrorIsf(t, err, queuetytype.ErrInvalidState, r.name)
		assert.Containsf(t, err.Error(), r.want, r.name)
	}
	for _, id := range []int64{approval, input, plain, busy} {
		assert.Emptyf(t, e.signalNames(id), "workflow %d: a refused answer stored a signal", id)
	}
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(approval).Status, "the approval wait is still open")

	name, err := e.C.Reject(e.Ctx, defaults, nil)
	require.NoError(t, err)
	assert.Equal(t, "rejected", name, "reject of a wait for Queuety's reject signal")
	name, err = e.C.Approve(e.Ctx, approval, queuety.State{"by": "ops"})
	require.NoError(t, err)
	assert.Equal(t, "approval", name, "approve of an approval wait")
	e.Drain(w)
	for _, id := range []int64{approval, defaults} {
		assert.Equalf(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "workflow %d ran on after its answer", id)
	}
	_, err = e.C.Approve(e.Ctx, approval, nil)
	require.ErrorIs(t, err, queuetytype.ErrInvalidState, "approve of a completed workflow")
	assert.Contains(t, err.Error(), "is not waiting for an answer (it is completed)")
	assert.Equal(t, []string{"approval"}, e.signalNames(approval), "signals of the approved workflow")
}

// testAnswerTwice: the same approval sent twice at once (a form submitted
// twice, two operators) settles the wait once and stores one signal; the
// other is refused.
func testAnswerTwice(t *testing.T, e *Env) {
	const rounds = 6
	ids := make([]int64, rounds)
	for i := range ids {
		ids[i] = e.startB(builder.Workflow("twice").WaitForApproval().Then("next"), nil)
	}
	w := e.Worker(nil)
	w.HandleStep("next", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	clients := e.Clients(2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := map[int64]int{}
	for _, id := range ids {
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.Approve(context.Background(), id, queuety.State{"by": "ops"})
				if err != nil {
					assert.ErrorIs(t, err, queuetytype.ErrInvalidState, "the second approve")
					return
				}
				mu.Lock()
				ok[id]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	e.Drain(w)
	for _, id := range ids {
		assert.Equalf(t, 1, ok[id], "workflow %d: approvals accepted", id)
		assert.Equalf(t, []string{"approval"}, e.signalNames(id), "workflow %d: signals stored", id)
		assert.Equalf(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "workflow %d", id)
	}
}
