package queuetytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytest"
	"github.com/queuety/queuety-go/queuetytype"
)

// dispatchThree dispatches the jobs the assertion tests look at.
func dispatchThree(t *testing.T, kit *queuetytest.Kit) {
	t.Helper()
	ctx, q := context.Background(), kit.Client()
	_, err := q.Dispatch(ctx, "send_welcome", queuety.State{"to": "ana@example.com", "tags": []string{"new"},
		"user": map[string]any{"id": 7, "plan": "pro"}}, queuety.OnQueue("mail"), queuety.Delay(10*time.Minute))
	require.NoError(t, err)
	_, err = q.Dispatch(ctx, "send_welcome", queuety.State{"to": "ben@example.com", "score": 1.5},
		queuety.OnQueue("mail"), queuety.WithPriority(queuetytype.PriorityHigh))
	require.NoError(t, err)
	_, err = q.Dispatch(ctx, "resize_image", queuety.State{"path": "a.png"})
	require.NoError(t, err)
}

func TestRequireDispatchedFindsTheMatchingJob(t *testing.T) {
	kit := queuetytest.New(t)
	dispatchThree(t, kit)

	job := queuetytest.RequireDispatched(t, kit, "send_welcome", queuetytest.Payload(queuety.State{"to": "ana@example.com"}))
	assert.Equal(t, int64(1), job.ID)
	job = queuetytest.RequireDispatched(t, kit, "send_welcome", queuetytest.Priority(queuetytype.PriorityHigh))
	assert.Equal(t, int64(2), job.ID)
	job = queuetytest.RequireDispatched(t, kit, "send_welcome", queuetytest.Delay(10*time.Minute))
	assert.Equal(t, int64(1), job.ID)
	job = queuetytest.RequireDispatched(t, kit, "resize_image", queuetytest.Queue("default"),
		queuetytest.Status(queuetytype.JobPending))
	assert.Equal(t, int64(3), job.ID)

	// Nested objects match as subsets, arrays element by element, numbers
	// by value.
	job = queuetytest.RequireDispatched(t, kit, "send_welcome",
		queuetytest.Payload(map[string]any{"user": map[string]any{"id": 7.0}, "tags": []string{"new"}}))
	assert.Equal(t, int64(1), job.ID)
	job = queuetytest.RequireDispatched(t, kit, "send_welcome", queuetytest.Payload(struct {
		Score float64 `json:"score"`
	}{1.5}))
	assert.Equal(t, int64(2), job.ID)

	job = queuetytest.RequireDispatched(t, kit, "send_welcome", queuetytest.Queue("mail"), queuetytest.Times(2))
	assert.Equal(t, int64(1), job.ID, "the oldest of them")
	assert.Len(t, queuetytest.Dispatched(t, kit, "send_welcome"), 2)
	assert.Len(t, queuetytest.Dispatched(t, kit, ""), 3)
	assert.Nil(t, queuetytest.RequireDispatched(t, kit, "charge_card", queuetytest.Times(0)))
}

func TestRequireDispatchedFails(t *testing.T) {
	kit := queuetytest.New(t)
	dispatchThree(t, kit)
	listing := []string{
		"jobs dispatched (3):",
		`job 1: send_welcome queue=mail priority=low status=pending delay=10m0s payload={"tags":["new"],"to":"ana@example.com","user":{"id":7,"plan":"pro"}}`,
		`job 2: send_welcome queue=mail priority=high status=pending delay=0s payload={"score":1.5,"to":"ben@example.com"}`,
		`job 3: resize_image queue=default priority=low status=pending delay=0s payload={"path":"a.png"}`,
	}
	cases := []struct {
		name    string
		handler string
		filters []queuetytest.Filter
		want    []string
	}{
		{"no job of the handler", "charge_card", nil,
			append([]string{`want 1 job "charge_card", found 0`}, listing...)},
		{"wrong queue", "resize_image", []queuetytest.Filter{queuetytest.Queue("mail")},
			append([]string{`want 1 job "resize_image" with queue "mail", found 0`}, listing...)},
		{"payload differs", "send_welcome", []queuetytest.Filter{queuetytest.Payload(queuety.State{"to": "cy@example.com"})},
			[]string{`with payload ⊇ {"to":"cy@example.com"}, found 0`, listing[1]}},
		{"nested payload differs", "send_welcome", []queuetytest.Filter{queuetytest.Payload(queuety.State{"user": map[string]any{"plan": "free"}})},
			[]string{"found 0"}},
		{"array differs", "send_welcome", []queuetytest.Filter{queuetytest.Payload(queuety.State{"tags": []string{"new", "vip"}})},
			[]string{"found 0"}},
		{"delay differs", "send_welcome", []queuetytest.Filter{queuetytest.Delay(5 * time.Minute)},
			[]string{"with delay 5m0s, found 0"}},
		{"status differs", "resize_image", []queuetytest.Filter{queuetytest.Status(queuetytype.JobCompleted)},
			[]string{"with status completed, found 0"}},
		{"priority differs", "resize_image", []queuetytest.Filter{queuetytest.Priority(queuetytype.PriorityUrgent)},
			[]string{"with priority urgent, found 0"}},
		{"more than one", "send_welcome", nil,
			[]string{`want 1 job "send_welcome", found 2 (use Times(2) to expect them all, or Dispatched to read them)`}},
		{"wrong count", "send_welcome", []queuetytest.Filter{queuetytest.Times(3)},
			[]string{`want 3 jobs "send_welcome", found 2`}},
		{"times zero", "resize_image", []queuetytest.Filter{queuetytest.Times(0)},
			[]string{`want 0 jobs "resize_image", found 1`}},
		{"workflow status on a job", "send_welcome", []queuetytest.Filter{queuetytest.Status(queuetytype.WorkflowCompleted)},
			[]string{"Status(completed) is a workflow status; jobs have job statuses"}},
		{"payload not an object", "send_welcome", []queuetytest.Filter{queuetytest.Payload([]int{1})},
			[]string{"Payload([]int) does not encode as a JSON object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireFails(t, func(tb testing.TB) {
				assert.Nil(t, queuetytest.RequireDispatched(tb, kit, tc.handler, tc.filters...))
			}, tc.want...)
		})
	}
}

func TestRequireDispatchedOnEmptyStore(t *testing.T) {
	kit := queuetytest.New(t)
	requireFails(t, func(tb testing.TB) { queuetytest.RequireDispatched(tb, kit, "send_welcome") },
		`want 1 job "send_welcome", found 0`, "no jobs were dispatched")
}

func TestRequireNotDispatched(t *testing.T) {
	kit := queuetytest.New(t)
	dispatchThree(t, kit)
	requirePasses(t, func(tb testing.TB) {
		queuetytest.RequireNotDispatched(tb, kit, "charge_card")
		queuetytest.RequireNotDispatched(tb, kit, "resize_image", queuetytest.Queue("mail"))
		queuetytest.RequireNotDispatched(tb, kit, "", queuetytest.Priority(queuetytype.PriorityUrgent))
	})
	msg := requireFails(t, func(tb testing.TB) {
		queuetytest.RequireNotDispatched(tb, kit, "send_welcome", queuetytest.Priority(queuetytype.PriorityHigh))
	}, `want no jobs "send_welcome" with priority high, found 1:`, "job 2: send_welcome queue=mail priority=high")
	assert.NotContains(t, msg, "job 1:", "only the jobs that matched are listed")
	requireFails(t, func(tb testing.TB) { queuetytest.RequireNotDispatched(tb, kit, "", queuetytest.Queue("mail")) },
		`want no jobs with queue "mail", found 2:`)
}

func TestRequireDispatchedMany(t *testing.T) {
	kit := queuetytest.New(t)
	dispatchThree(t, kit)
	mail := func(to string) queuetytest.ExpectedJob {
		return queuetytest.ExpectedJob{Handler: "send_welcome", Filters: []queuetytest.Filter{queuetytest.Payload(queuety.State{"to": to})}}
	}
	resize := queuetytest.ExpectedJob{Handler: "resize_image"}

	requirePasses(t, func(tb testing.TB) {
		got := queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{mail("ana@example.com"), mail("ben@example.com"), resize})
		require.Len(t, got, 3)
		assert.Equal(t, "resize_image", got[2].Handler)
		// Jobs of handlers not named are ignored.
		queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{resize})
	})
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{mail("ben@example.com"), mail("ana@example.com")})
	}, "job 0 of 2 does not match: want send_welcome with payload ⊇ {\"to\":\"ben@example.com\"}",
		"want, in order:\n  0: send_welcome", "found:\n  job 1: send_welcome")
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{mail("ana@example.com")})
	}, `want 1 jobs of "send_welcome", found 2`)
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{mail("ana@example.com"), resize, mail("ben@example.com")})
	}, "job 1 of 3 does not match: want resize_image")
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireDispatchedMany(tb, kit, []queuetytest.ExpectedJob{{Handler: "resize_image", Filters: []queuetytest.Filter{queuetytest.Times(1)}}})
	}, "Times does not apply to RequireDispatchedMany")
}

func TestRequireWorkflowDispatched(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	_, err := builder.Workflow("import").Then("fetch").OnQueue("imports").WithPriority(queuetytype.PriorityHigh).
		Dispatch(ctx, kit.Client(), queuety.State{"source": "s3://a"})
	require.NoError(t, err)
	_, err = builder.Workflow("import").Then("fetch").Dispatch(ctx, kit.Client(), queuety.State{"source": "s3://b"})
	require.NoError(t, err)

	wf := queuetytest.RequireWorkflowDispatched(t, kit, "import", queuetytest.State(queuety.State{"source": "s3://b"}))
	assert.Equal(t, int64(2), wf.ID)
	wf = queuetytest.RequireWorkflowDispatched(t, kit, "import", queuetytest.Queue("imports"),
		queuetytest.Priority(queuetytype.PriorityHigh), queuetytest.Status(queuetytype.WorkflowRunning))
	assert.Equal(t, int64(1), wf.ID)
	wf = queuetytest.RequireWorkflowDispatched(t, kit.Client(), "import", queuetytest.Times(2))
	assert.Equal(t, int64(1), wf.ID, "the oldest; a *queuety.Client is a Source too")
	assert.Len(t, queuetytest.DispatchedWorkflows(t, kit, ""), 2)
	queuetytest.RequireWorkflowNotDispatched(t, kit, "export")
	// The engine's own step jobs are not jobs the code dispatched.
	queuetytest.RequireNotDispatched(t, kit, "", queuetytest.Queue("nothing"))

	requireFails(t, func(tb testing.TB) { queuetytest.RequireWorkflowDispatched(tb, kit, "export") },
		`want 1 workflow "export", found 0`, "workflows dispatched (2):",
		`workflow 1: import status=running step=0/1 queue=imports priority=high state={"source":"s3://a"}`,
		`workflow 2: import status=running step=0/1 queue=default priority=low state={"source":"s3://b"}`)
	requireFails(t, func(tb testing.TB) { queuetytest.RequireWorkflowDispatched(tb, kit, "import") },
		`want 1 workflow "import", found 2 (use Times(2) to expect them all, or DispatchedWorkflows to read them)`)
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireWorkflowDispatched(tb, kit, "import", queuetytest.State(queuety.State{"source": "ftp://c"}))
	}, `with state ⊇ {"source":"ftp://c"}, found 0`)
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireWorkflowDispatched(tb, kit, "import", queuetytest.Status(queuetytype.WorkflowCompleted))
	}, "with status completed, found 0")
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireWorkflowDispatched(tb, kit, "import", queuetytest.Delay(time.Second))
	}, "Delay applies to jobs, not workflows")
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireWorkflowDispatched(tb, kit, "import", queuetytest.Status(queuetytype.JobPending))
	}, "Status(pending) is a job status; workflows have workflow statuses")
	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireWorkflowNotDispatched(tb, kit, "import", queuetytest.Queue("imports"))
	}, `want no workflows "import" with queue "imports", found 1:`, "workflow 1: import")
	requireFails(t, func(tb testing.TB) { queuetytest.RequireDispatched(tb, kit, "fetch") },
		`want 1 job "fetch", found 2`)
}

func TestRequireNothingDispatched(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	requirePasses(t, func(tb testing.TB) { queuetytest.RequireNothingDispatched(tb, kit) })

	_, err := kit.Client().Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	requireFails(t, func(tb testing.TB) { queuetytest.RequireNothingDispatched(tb, kit) },
		"want nothing dispatched, found 1 jobs and 0 workflows", "job 1: ping")

	other := queuetytest.New(t)
	_, err = builder.Workflow("w").Sleep(time.Minute).Dispatch(ctx, other.Client(), nil)
	require.NoError(t, err)
	requireFails(t, func(tb testing.TB) { queuetytest.RequireNothingDispatched(tb, other) },
		"found 0 jobs and 1 workflows", "workflow 1: w")
}

func TestInternalStepJobsCountOnlyByName(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	_, err := builder.Workflow("w").Sleep(time.Minute).WaitForSignal("go").Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)
	kit.Work(ctx)

	assert.Empty(t, queuetytest.Dispatched(t, kit, ""))
	job := queuetytest.RequireDispatched(t, kit, "__queuety_delay", queuetytest.Delay(time.Minute))
	assert.Equal(t, queuetytype.JobPending, job.Status)
}
