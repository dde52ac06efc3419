package interop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestLiveRewindAndFork: Queuety PHP rewinds and forks a workflow Go ran,
// and Go rewinds and forks one PHP ran; the rewound and forked workflows
// run to completion on the other side, and both sides read the same state
// after each step (workflow_state_at).
func TestLiveRewindAndFork(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	w := interopWorker(c)
	runGo := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	state := func(id int64) queuety.State {
		t.Helper()
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		return st
	}
	done := func(id int64) {
		t.Helper()
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
	}

	// Go runs it; PHP reads its history, rewinds it and forks it.
	goID, err := builder.Workflow("hist").Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Increment`).
		Then(`QueuetyGoInterop\Finish`).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	runGo()
	gid := strconv.FormatInt(goID, 10)
	phpState := php.eval(`echo json_encode(\Queuety\Queuety::workflow_state_at(` + gid + `, 1));`)
	goState, err := c.StateAt(ctx, goID, 1)
	require.NoError(t, err)
	assert.JSONEq(t, strings.TrimSpace(phpState), jsonOf(goState), "state after step 1, PHP's (expected) and Go's (actual)")
	php.eval(`\Queuety\Queuety::rewind_workflow(` + gid + `, 0);`)
	forkOut := php.eval(`echo \Queuety\Queuety::fork_workflow(` + gid + `);`)
	phpFork, err := strconv.ParseInt(strings.TrimSpace(forkOut), 10, 64)
	require.NoError(t, err, "PHP printed %q", forkOut)
	runGo()
	done(goID)
	done(phpFork)
	assert.Equal(t, int64(2), state(goID)["counter"], "rewound to after step 0 and run again by Go")
	assert.Equal(t, int64(2), state(phpFork)["counter"], "PHP's fork, run by Go")

	// PHP runs it; Go rewinds it and forks it; PHP runs them on.
	out := php.eval(`echo \Queuety\Queuety::workflow('hist')->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Increment')
		->then('QueuetyGoInterop\Finish')->dispatch([]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	php.run("work")
	require.NoError(t, c.RewindWorkflow(ctx, phpID, 0))
	goFork, err := c.ForkWorkflow(ctx, phpID)
	require.NoError(t, err)
	php.run("work")
	done(phpID)
	done(goFork)
	assert.Equal(t, int64(2), state(phpID)["counter"], "rewound by Go, run again by PHP")
	assert.Equal(t, int64(2), state(goFork)["counter"], "Go's fork, run by PHP")
}

// TestLiveExportReplay: an export written by Go replays in Queuety PHP, and
// one written by PHP replays in Go; each replay has the source's state,
// position and history, and runs on to completion on the other side.
func TestLiveExportReplay(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	dir := t.TempDir()
	w := interopWorker(c)
	runGo := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	events := func(id int64) []string {
		t.Helper()
		d, err := c.DescribeWorkflow(ctx, id)
		require.NoError(t, err)
		var out []string
		for _, te := range d.Timeline {
			if te.Source == "event" {
				out = append(out, te.Event)
			}
		}
		return out
	}

	// Go runs up to the signal wait and exports; PHP replays and finishes.
	goID, err := builder.Workflow("ex").Then(`QueuetyGoInterop\Increment`).WaitForSignal("go").
		Then(`QueuetyGoInterop\Finish`).Dispatch(ctx, c, queuety.State{"doc": 1})
	require.NoError(t, err)
	runGo()
	export, err := c.ExportWorkflow(ctx, goID)
	require.NoError(t, err)
	file := filepath.Join(dir, "go-export.json")
	require.NoError(t, os.WriteFile(file, export, 0o600))
	out := php.eval(`echo \Queuety\Queuety::replay_workflow_file('` + file + `');`)
	phpReplay, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	wf, err := c.Workflow(ctx, phpReplay)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, wf.Status, "PHP's replay of Go's export keeps its status")
	assert.Equal(t, 1, wf.CurrentStep, "and its position")
	assert.Contains(t, events(phpReplay), "workflow_replayed", "replay event")
	php.eval(`\Queuety\Queuety::signal(` + strconv.FormatInt(phpReplay, 10) + `, 'go', []);`)
	php.run("work")
	wf, err = c.Workflow(ctx, phpReplay)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "PHP ran the replay to completion")

	// PHP runs one step and exports; Go replays and finishes.
	out = php.eval(`echo \Queuety\Queuety::workflow('ex')->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Increment')
		->then('QueuetyGoInterop\Finish')->dispatch(['doc' => 2]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	php.run("work-once")
	phpExport := php.eval(`echo json_encode(\Queuety\Queuety::export_workflow(` + strconv.FormatInt(phpID, 10) + `));`)
	goReplay, err := c.ReplayWorkflow(ctx, []byte(phpExport))
	require.NoError(t, err)
	wf, err = c.Workflow(ctx, goReplay)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "Go's replay of PHP's export")
	assert.Equal(t, 1, wf.CurrentStep, "position")
	replayedEvents := events(goReplay)
	assert.Contains(t, replayedEvents, "step_completed", "history replayed")
	assert.Contains(t, replayedEvents, "workflow_replayed", "replay event")
	runGo()
	wf, err = c.Workflow(ctx, goReplay)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "Go ran the replay to completion")
	st, err := c.State(ctx, goReplay)
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"doc": int64(2), "counter": int64(2), "finished": true}, st, "final state")
}

// TestLivePHPReadsGoForEachHistory: Queuety PHP reads the history of a
// for_each step a Go worker ran, whose branch events carry the item and
// its index and no state: its timeline and trace decode every event, its
// workflow_state_at of the step is Go's StateAt, it rewinds the workflow to
// after the step (a Go worker runs the last step again), and it replays
// Go's export, history included.
func TestLivePHPReadsGoForEachHistory(t *testing.T) {
	t.Parallel()
	s := newLiveSide(t)
	id := s.goDispatch("fe_all")
	s.goRun()
	gid := strconv.FormatInt(id, 10)
	wf, err := s.c.Workflow(s.ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "Go ran fe_all")

	var timeline []map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.php.eval(`echo json_encode(\Queuety\Queuety::workflow_timeline(`+gid+`, null));`)), &timeline))
	branches := 0
	for _, ev := range timeline {
		if ev["handler"] != hDoubleItem || ev["event"] == "step_completed" {
			continue
		}
		branches++
		assert.Nil(t, ev["state_before"], "PHP reads branch event %v without state_before", ev["id"])
		assert.Nil(t, ev["state_after"], "PHP reads branch event %v without state_after", ev["id"])
		in, _ := ev["input"].(map[string]any)
		assert.Contains(t, in, "item_index", "PHP decodes branch event %v's input: %v", ev["id"], ev["input"])
	}
	assert.Equal(t, 6, branches, "branch events PHP read: started and item_completed of three items")

	var trace struct {
		Steps []struct {
			StepIndex int              `json:"step_index"`
			Events    []map[string]any `json:"events"`
			Latest    map[string]any   `json:"latest"`
		} `json:"steps"`
		Events []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.php.eval(`echo json_encode(\Queuety\Queuety::workflow_trace(`+gid+`));`)), &trace))
	assert.Len(t, trace.Events, len(timeline), "PHP's trace: every event")
	require.Len(t, trace.Steps, 3, "PHP's trace: steps")
	assert.Equal(t, "step_completed", trace.Steps[1].Latest["event"], "PHP's trace: the for-each step's latest event")

	phpState := s.php.eval(`echo json_encode(\Queuety\Queuety::workflow_state_at(` + gid + `, 1));`)
	goState, err := s.c.StateAt(s.ctx, id, 1)
	require.NoError(t, err)
	assert.JSONEq(t, strings.TrimSpace(phpState), jsonOf(goState), "state after the for-each step, PHP's (expected) and Go's (actual)")

	export := s.php.eval(`echo json_encode(\Queuety\Queuety::export_workflow(` + gid + `));`)
	out := s.php.eval(`echo \Queuety\Queuety::replay_workflow(json_decode(` + phpString(strings.TrimSpace(export)) + `, true));`)
	replay, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	replayed, err := s.c.StateAt(s.ctx, replay, 1)
	require.NoError(t, err)
	assert.Equal(t, goState, replayed, "Go reads PHP's replay of the Go-run workflow")

	s.php.eval(`\Queuety\Queuety::rewind_workflow(` + gid + `, 1);`)
	wf, err = s.c.Workflow(s.ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 2, wf.CurrentStep, "PHP rewound to after the for-each step")
	s.goRun()
	wf, err = s.c.Workflow(s.ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "Go ran the last step again")
}
