package builder_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func TestInvalidDefinitions(t *testing.T) {
	manySteps := builder.Workflow("many")
	for i := range queuetytype.MaxSteps + 1 {
		manySteps.Then(fmt.Sprintf("step_%d", i))
	}
	maxSteps := builder.Workflow("max")
	for i := range queuetytype.MaxSteps {
		maxSteps.Then(fmt.Sprintf("step_%d", i))
	}
	_, err := maxSteps.Definition()
	require.NoError(t, err, "255 steps")

	tests := []struct {
		name  string
		b     *builder.Builder
		state any
		want  error
		msg   string // a substring of the error
	}{
		// Mistakes only the builder can see.
		{name: "must complete within zero", b: builder.Workflow("w").Then("a").MustCompleteWithin(0, 0, 0, 0),
			want: queuetytype.ErrInvalidTimeout, msg: "must complete within: deadline must be at least 1 second, got 0s"},
		{name: "must complete within negative part", b: builder.Workflow("w").Then("a").MustCompleteWithin(0, 1, -30, 0),
			want: queuetytype.ErrInvalidTimeout, msg: "minutes must not be negative, got -30"},
		{name: "must complete within negative days", b: builder.Workflow("w").Then("a").MustCompleteWithin(-1, 48, 0, 0),
			want: queuetytype.ErrInvalidTimeout, msg: "days must not be negative"},
		{name: "must complete within negative seconds", b: builder.Workflow("w").Then("a").MustCompleteWithin(0, 0, 0, -1),
			want: queuetytype.ErrInvalidTimeout, msg: "seconds must not be negative"},
		{name: "must complete within overflow", b: builder.Workflow("w").Then("a").MustCompleteWithin(math.MaxInt32, math.MaxInt32, 0, 0),
			want: queuetytype.ErrInvalidTimeout, msg: "too far away"},
		{name: "execution timeout zero", b: builder.Workflow("w").Then("a").ExecutionTimeout(0),
			want: queuetytype.ErrInvalidTimeout, msg: "execution timeout must be at least 1 second, got 0s"},
		{name: "execution timeout negative", b: builder.Workflow("w").Then("a").ExecutionTimeout(-time.Hour),
			want: queuetytype.ErrInvalidTimeout},
		{name: "run timeout zero", b: builder.Workflow("w").Then("a").RunTimeout(0),
			want: queuetytype.ErrInvalidTimeout, msg: "run timeout"},
		{name: "run timeout negative", b: builder.Workflow("w").Then("a").RunTimeout(-time.Second),
			want: queuetytype.ErrInvalidTimeout},
		{name: "sleep negative", b: builder.Workflow("w").Then("a").Sleep(-time.Second),
			want: queuetytype.ErrInvalidArgument, msg: "step 1 (Sleep): duration must not be negative"},
		{name: "sleep negative below a second", b: builder.Workflow("w").Then("a").Sleep(-500 * time.Millisecond),
			want: queuetytype.ErrInvalidArgument},
		{name: "result key on then", b: builder.Workflow("w").Then("a", builder.ResultKey("k")),
			want: queuetytype.ErrInvalidArgument, msg: `step 0 (Then("a")): ResultKey applies only to WaitForSignal`},
		{name: "timeout on then", b: builder.Workflow("w").Then("a", builder.Timeout(time.Minute)),
			want: queuetytype.ErrInvalidArgument, msg: "Timeout applies only to WaitForSignal"},
		{name: "result key on parallel", b: builder.Workflow("w").ParallelWith([]string{"a", "b"}, builder.ResultKey("k")),
			want: queuetytype.ErrInvalidArgument},
		{name: "retry on signal wait", b: builder.Workflow("w").Then("a").WaitForSignal("go", builder.Retry(5)),
			want: queuetytype.ErrInvalidArgument, msg: "a signal wait takes Name, ResultKey, Timeout, MatchPayload, CorrelationKey, and Any or SignalNames"},
		{name: "match payload on then", b: builder.Workflow("w").Then("a", builder.MatchPayload(queuety.State{"k": 1})),
			want: queuetytype.ErrInvalidArgument, msg: "MatchPayload applies only to signal waits"},
		{name: "correlation key on for each", b: builder.Workflow("w").ForEach("items", "h", builder.CorrelationKey("id")),
			want: queuetytype.ErrInvalidArgument, msg: "CorrelationKey applies only to signal waits"},
		{name: "blank correlation key", b: builder.Workflow("w").WaitForSignal("go", builder.CorrelationKey("  ")),
			want: queuetytype.ErrInvalidArgument, msg: "correlation key is blank"},
		{name: "match payload not JSON", b: builder.Workflow("w").WaitForSignal("go", builder.MatchPayload(queuety.State{"f": math.NaN()})),
			want: queuetytype.ErrInvalidArgument, msg: "match payload does not encode as JSON"},
		{name: "queue on signal wait", b: builder.Workflow("w").WaitForSignal("go", builder.Queue("q")),
			want: queuetytype.ErrInvalidArgument},
		{name: "start to close on signal wait", b: builder.Workflow("w").WaitForSignal("go", builder.StartToClose(time.Minute)),
			want: queuetytype.ErrInvalidArgument},
		{name: "depends on for a step", b: builder.Workflow("w").Then("a", builder.Job(queuety.DependsOn(1))),
			want: queuetytype.ErrInvalidArgument, msg: "DependsOn"},
		{name: "unique for a step", b: builder.Workflow("w").Then("a", builder.Job(queuety.Unique())),
			want: queuetytype.ErrInvalidArgument, msg: "Unique"},
		{name: "empty deadline handler", b: builder.Workflow("w").Then("a").OnDeadline(""),
			want: queuetytype.ErrInvalidArgument, msg: "on deadline: handler name is empty"},
		{name: "empty cancel handler", b: builder.Workflow("w").Then("a").OnCancel(""),
			want: queuetytype.ErrInvalidArgument},
		{name: "first mistake wins", b: builder.Workflow("w").Then("a").Sleep(-time.Second).ExecutionTimeout(0),
			want: queuetytype.ErrInvalidArgument, msg: "Sleep"},

		// Mistakes the engine finds at dispatch.
		{name: "empty name", b: builder.Workflow("").Then("a"), want: queuetytype.ErrInvalidArgument, msg: "workflow name is empty"},
		{name: "no steps", b: builder.Workflow("w").MustCompleteWithin(0, 1, 0, 0), want: queuetytype.ErrInvalidArgument, msg: "no steps"},
		{name: "empty handler", b: builder.Workflow("w").Then("a").Then(""), want: queuetytype.ErrInvalidArgument, msg: "handler name is empty"},
		{name: "reserved handler", b: builder.Workflow("w").Then(engine.HandlerDelay), want: queuetytype.ErrInvalidArgument},
		{name: "parallel without handlers", b: builder.Workflow("w").Parallel(), want: queuetytype.ErrInvalidArgument},
		{name: "parallel with an empty handler", b: builder.Workflow("w").Parallel("a", ""), want: queuetytype.ErrInvalidArgument},
		{name: "duplicate names", b: builder.Workflow("w").Then("a", builder.Name("x")).Then("b", builder.Name("x")),
			want: queuetytype.ErrInvalidArgument, msg: `same name "x"`},
		{name: "name clashes with a default name", b: builder.Workflow("w").Then("a", builder.Name("1")).Then("b"),
			want: queuetytype.ErrInvalidArgument},
		{name: "same signal waited twice", b: builder.Workflow("w").WaitForSignal("go").WaitForSignal("go"),
			want: queuetytype.ErrInvalidArgument},
		{name: "256 steps", b: manySteps, want: queuetytype.ErrInvalidArgument, msg: "256 steps"},
		{name: "bad priority", b: builder.Workflow("w").Then("a").WithPriority(4), want: queuetytype.ErrInvalidArgument, msg: "priority 4"},
		{name: "bad step priority", b: builder.Workflow("w").Then("a", builder.Priority(-1)), want: queuetytype.ErrInvalidArgument},
		{name: "too many attempts", b: builder.Workflow("w").Then("a").MaxAttempts(256), want: queuetytype.ErrInvalidArgument},
		{name: "negative retry", b: builder.Workflow("w").Then("a", builder.Retry(-1)), want: queuetytype.ErrInvalidArgument},
		{name: "negative job delay", b: builder.Workflow("w").Then("a", builder.Job(queuety.Delay(-time.Second))), want: queuetytype.ErrInvalidArgument},
		{name: "long queue", b: builder.Workflow("w").Then("a").OnQueue(strings.Repeat("q", 65)), want: queuetytype.ErrInvalidArgument},
		{name: "execution timeout below a second", b: builder.Workflow("w").Then("a").ExecutionTimeout(500 * time.Millisecond),
			want: queuetytype.ErrInvalidTimeout},
		{name: "run timeout below a second", b: builder.Workflow("w").Then("a").RunTimeout(time.Millisecond), want: queuetytype.ErrInvalidTimeout},
		{name: "signal timeout below a second", b: builder.Workflow("w").WaitForSignal("go", builder.Timeout(500*time.Millisecond)),
			want: queuetytype.ErrInvalidTimeout},
		{name: "negative signal timeout", b: builder.Workflow("w").WaitForSignal("go", builder.Timeout(-time.Second)),
			want: queuetytype.ErrInvalidTimeout},
		{name: "start to close below a second", b: builder.Workflow("w").Then("a", builder.StartToClose(time.Millisecond)),
			want: queuetytype.ErrInvalidTimeout},
		{name: "empty signal", b: builder.Workflow("w").WaitForSignal(""), want: queuetytype.ErrInvalidArgument},
		{name: "private key in the initial state", b: builder.Workflow("w").Then("a"), state: queuety.State{"_steps": 1},
			want: queuetytype.ErrInvalidArgument},
		{name: "initial state not an object", b: builder.Workflow("w").Then("a"), state: []int{1, 2},
			want: queuetytype.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t)
			// Definition validates the whole definition (the builder's own
			// checks and the engine's); only the initial state is checked at
			// Dispatch alone.
			_, defErr := tt.b.Definition()
			if tt.state == nil {
				assert.Error(t, defErr, "Definition()")
			} else {
				assert.NoError(t, defErr, "Definition()")
			}
			id, err := tt.b.Dispatch(context.Background(), c, tt.state)
			require.ErrorIs(t, err, tt.want, "Dispatch() = %d", id)
			if defErr != nil {
				assert.ErrorIs(t, defErr, tt.want, "Definition()")
			}
			assert.Zero(t, id, "Dispatch() id")
			if tt.msg != "" {
				assert.ErrorContains(t, err, tt.msg, "Dispatch()")
			}
			assertNothingWritten(t, c)
		})
	}
}

func TestDispatchNilClient(t *testing.T) {
	_, err := builder.Workflow("w").Then("a").Dispatch(context.Background(), nil, nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "Dispatch(nil client)")
	var b *builder.Builder
	_, err = b.Definition()
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "nil Builder Definition()")
}

func TestMustCompleteWithinSums(t *testing.T) {
	tests := []struct {
		d, h, m, s int
		want       time.Duration
	}{
		{0, 24, 0, 0, 24 * time.Hour},
		{1, 12, 0, 0, 36 * time.Hour},
		{0, 1, 30, 0, 90 * time.Minute},
		{0, 0, 0, 1, time.Second},
		{0, 0, 90, 90, 91*time.Minute + 30*time.Second},
		{2, 0, 0, 0, 48 * time.Hour},
	}
	for _, tt := range tests {
		def, err := builder.Workflow("w").Then("a").MustCompleteWithin(tt.d, tt.h, tt.m, tt.s).Definition()
		require.NoError(t, err, "MustCompleteWithin(%d, %d, %d, %d)", tt.d, tt.h, tt.m, tt.s)
		assert.Equal(t, tt.want, def.ExecutionTimeout, "MustCompleteWithin(%d, %d, %d, %d)", tt.d, tt.h, tt.m, tt.s)
	}
	// The last deadline setter wins, in either order.
	def, _ := builder.Workflow("w").Then("a").ExecutionTimeout(time.Minute).MustCompleteWithin(0, 2, 0, 0).Definition()
	assert.Equal(t, 2*time.Hour, def.ExecutionTimeout, "MustCompleteWithin after ExecutionTimeout")
	def, _ = builder.Workflow("w").Then("a").MustCompleteWithin(0, 2, 0, 0).ExecutionTimeout(time.Minute).Definition()
	assert.Equal(t, time.Minute, def.ExecutionTimeout, "ExecutionTimeout after MustCompleteWithin")
}

func TestDefinitionMapsEverySetting(t *testing.T) {
	backoff := queuety.BackoffSeconds(5, 30)
	def, err := builder.Workflow("import").
		Then(`App\Steps\Fetch`, builder.Name("fetch"), builder.Queue("io"), builder.Priority(queuetytype.PriorityHigh),
			builder.Retry(5, backoff), builder.ScheduleToStart(time.Minute), builder.StartToClose(2*time.Minute),
			builder.ScheduleToClose(time.Hour), builder.Heartbeat(10*time.Second), builder.Job(queuety.Delay(3*time.Second))).
		Parallel("a", "b").
		ParallelWith([]string{"c", "d"}, builder.Name("fan_out"), builder.Backoff(queuetytype.BackoffLinear)).
		Sleep(1500*time.Millisecond).
		WaitForSignal("approval", builder.Name("approve"), builder.ResultKey("decision"), builder.Timeout(48*time.Hour)).
		MustCompleteWithin(1, 0, 0, 0).
		RunTimeout(6 * time.Hour).
		OnDeadline("import_timeout").
		OnCancel("import_cancelled").
		OnQueue("imports").
		WithPriority(queuetytype.PriorityNormal).
		MaxAttempts(4).
		IdempotencyKey("import:2026-05-01").
		Version("v2").
		Definition()
	require.NoError(t, err)
	want := queuety.WorkflowDefinition{
		Name: "import",
		Steps: []queuety.WorkflowStep{
			{Type: queuetytype.StepSingle, Name: "fetch", Handler: `App\Steps\Fetch`, Options: queuetytype.JobSpec{
				Queue: "io", Priority: queuetytype.PriorityHigh, PrioritySet: true, Delay: 3 * time.Second, MaxAttempts: 5, Backoff: backoff,
				Timeouts: queuetytype.ActivityTimeouts{ScheduleToStart: time.Minute, StartToClose: 2 * time.Minute, ScheduleToClose: time.Hour, Heartbeat: 10 * time.Second},
			}},
			{Type: queuetytype.StepParallel, Handlers: []string{"a", "b"}},
			{Type: queuetytype.StepParallel, Name: "fan_out", Handlers: []string{"c", "d"}, Options: queuetytype.JobSpec{Backoff: queuetytype.BackoffLinear}},
			{Type: queuetytype.StepDelay, Delay: 2 * time.Second},
			{Type: queuetytype.StepWaitForSignal, Name: "approve", Signal: "approval", ResultKey: "decision", Timeout: 48 * time.Hour},
		},
		Queue: "imports", Priority: queuetytype.PriorityNormal, MaxAttempts: 4,
		ExecutionTimeout: 24 * time.Hour, RunTimeout: 6 * time.Hour,
		OnDeadline: "import_timeout", OnCancel: "import_cancelled",
		IdempotencyKey: "import:2026-05-01", Version: "v2",
	}
	assert.Equal(t, want, def, "Definition()")
}

func TestNilOptionsAreIgnored(t *testing.T) {
	def, err := builder.Workflow("w").Then("a", nil, builder.Job(nil)).WaitForSignal("s", nil).Definition()
	require.NoError(t, err)
	assert.Zero(t, def.Steps[0].Options, "options; want none")
}

func TestSleepRoundsUpToWholeSeconds(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{
		{0, 0},
		{time.Nanosecond, time.Second},
		{time.Second, time.Second},
		{1500 * time.Millisecond, 2 * time.Second},
		{30 * time.Minute, 30 * time.Minute},
	} {
		def, err := builder.Workflow("w").Sleep(tt.in).Definition()
		require.NoError(t, err, "Sleep(%s)", tt.in)
		assert.Equal(t, tt.want, def.Steps[0].Delay, "Sleep(%s) stores", tt.in)
	}

	// The stored step says delay_seconds 2 and the sleeps are named by count.
	c := openClient(t)
	id, err := builder.Workflow("w").Sleep(1500*time.Millisecond).Then("a").Sleep(time.Minute).Dispatch(context.Background(), c, nil)
	require.NoError(t, err)
	steps := storedSteps(t, c, id)
	want := `[{"type":"delay","name":"delay_0","delay_seconds":2,"compensation":null},` +
		`{"type":"single","name":"1","class":"a"},` +
		`{"type":"delay","name":"delay_1","delay_seconds":60,"compensation":null}]`
	assert.Equal(t, want, steps, "_steps")
}

func TestStepOptionsReachTheJobRow(t *testing.T) {
	c := openClient(t)
	ctx := context.Background()
	id, err := builder.Workflow("w").
		Then("a", builder.Queue("io"), builder.Priority(queuetytype.PriorityUrgent), builder.Retry(7, queuetytype.BackoffFixed)).
		OnQueue("imports").WithPriority(queuetytype.PriorityNormal).MaxAttempts(4).
		Dispatch(ctx, c, nil)
	require.NoError(t, err)
	jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "jobs")
	j := jobs[0]
	assert.Equal(t, "io", j.Queue, "job queue")
	assert.Equal(t, queuetytype.PriorityUrgent, j.Priority, "job priority")
	assert.Equal(t, 7, j.MaxAttempts, "job max_attempts")
	assert.Equal(t, `{"__queuety_runtime":{"max_attempts":7,"backoff":"fixed"}}`, string(j.Payload), "payload")
	state := storedState(t, c, id)
	for k, want := range map[string]string{"_queue": `"imports"`, "_priority": "1", "_max_attempts": "4"} {
		v, _ := state.Get(k)
		assert.Equal(t, want, mustMarshal(t, v), "state %s", k)
	}
}

// A Builder can be dispatched many times; the definitions it hands out
// never share slices with it or with each other.
func TestBuilderIsReusable(t *testing.T) {
	handlers := []string{"a", "b"}
	b := builder.Workflow("reuse").Parallel(handlers...).Then("c")
	handlers[0] = "changed by the caller"

	first, err := b.Definition()
	require.NoError(t, err)
	second, _ := b.Definition()
	first.Steps[0].Handlers[1] = "changed"
	first.Steps[1].Name = "renamed"
	first.Steps = append(first.Steps[:1], queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: "x"})
	assert.Equal(t, []queuety.WorkflowStep{
		{Type: queuetytype.StepParallel, Handlers: []string{"a", "b"}},
		{Type: queuetytype.StepSingle, Handler: "c"},
	}, second.Steps, "second definition changed with the first")

	c := openClient(t)
	ctx := context.Background()
	id1, err := b.Dispatch(ctx, c, queuety.State{"n": 1})
	require.NoError(t, err)
	id2, err := b.Dispatch(ctx, c, queuety.State{"n": 2})
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2, "two dispatches returned the same id")
	// Dispatch filled in default step names on its own copy only.
	third, _ := b.Definition()
	assert.Empty(t, third.Steps[0].Name, "dispatch changed the builder's steps: %+v", third.Steps)
	assert.Empty(t, third.Steps[1].Name, "dispatch changed the builder's steps: %+v", third.Steps)
	s1, s2 := storedSteps(t, c, id1), storedSteps(t, c, id2)
	want := `[{"type":"parallel","name":"0","handlers":["a","b"]},{"type":"single","name":"1","class":"c"}]`
	assert.Equal(t, want, s1, "_steps of the first dispatch")
	assert.Equal(t, want, s2, "_steps of the second dispatch")

	// Growing the builder after a dispatch does not touch what was dispatched.
	b.Then("d")
	assert.Equal(t, want, storedSteps(t, c, id1), "_steps after growing the builder")
}

// A finished Builder may be dispatched from several goroutines at once
// (run with -race).
func TestConcurrentDispatch(t *testing.T) {
	c := openClient(t)
	b := builder.Workflow("concurrent").Then("a").Parallel("b", "c").Sleep(time.Second).WaitForSignal("go")
	const n = 8
	ids := make(chan int64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			id, err := b.Dispatch(context.Background(), c, nil)
			ids <- id
			errs <- err
		})
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	assert.Len(t, seen, n, "distinct workflows")
}

func TestIdempotentDispatch(t *testing.T) {
	c := openClient(t)
	ctx := context.Background()
	b := builder.Workflow("nightly").Then("build").IdempotencyKey("nightly:1")
	id1, err := b.Dispatch(ctx, c, queuety.State{"date": "2026-11-21"})
	require.NoError(t, err)
	id2, err := b.Dispatch(ctx, c, queuety.State{"date": "2026-11-21", "rerun": true})
	require.NoError(t, err)
	assert.Equal(t, id1, id2, "ids of the two dispatches")
	wfs, _ := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	jobs, _ := c.ListJobs(ctx, driver.JobFilter{})
	assert.Len(t, wfs, 1, "workflows")
	assert.Len(t, jobs, 1, "jobs")
}

// storedState reads a workflow's stored state with its key order.
func storedState(t *testing.T, c *queuety.Client, id int64) *phpjson.Object {
	t.Helper()
	wf, err := c.Workflow(context.Background(), id)
	require.NoError(t, err, "read workflow %d", id)
	o, err := phpjson.DecodeObject(wf.State)
	require.NoError(t, err, "decode state of workflow %d", id)
	return o
}

// storedSteps returns a workflow's _steps as PHP-style JSON.
func storedSteps(t *testing.T, c *queuety.Client, id int64) string {
	t.Helper()
	v, ok := storedState(t, c, id).Get("_steps")
	require.True(t, ok, "workflow %d has no _steps", id)
	return mustMarshal(t, v)
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := phpjson.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
