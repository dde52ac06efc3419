package advance

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// deadlineCore is fakeCore with the engine's schedule deadlines.
type deadlineCore struct{ fakeCore }

func (c *deadlineCore) ScheduleDeadlines(j *driver.Job, t queuetytype.ActivityTimeouts, now time.Time) {
	dispatch.ApplyScheduleDeadlines(j, t, now)
}

func branchDefs(t *testing.T) map[string]*phpjson.Object {
	t.Helper()
	defs := map[string]*phpjson.Object{}
	for name, js := range map[string]string{
		"bare":    `{"type":"for_each","name":"fan","class":"Item","items_key":"items"}`,
		"options": `{"type":"for_each","name":"fan","class":"Item","items_key":"items","queue":"q2","priority":7,"max_attempts":4,"job_delay":3,"concurrency_group":"g","concurrency_limit":2,"cost_units":5}`,
		"runtime": `{"type":"for_each","name":"fan","class":"Item","items_key":"items","timeout":30,"schedule_to_start_timeout":60,"schedule_to_close_timeout":90,"retry":{"max_attempts":6,"backoff":"exponential"}}`,
	} {
		o, err := phpjson.DecodeObject([]byte(js))
		require.NoError(t, err, name)
		defs[name] = o
	}
	return defs
}

// TestBranchJobsMatchStepJob: the jobs a for-each expansion builds with
// one jobMaker for all its branches are those stepJob builds for each
// branch alone, payload bytes, options and deadlines included, and no
// two of them share their step index or a payload tree.
func TestBranchJobsMatchStepJob(t *testing.T) {
	core := &deadlineCore{}
	s := New(nil, Config{Clock: fixedClock{now}, Logger: slog.New(slog.DiscardHandler), Core: core})
	state, err := phpjson.DecodeObject([]byte(`{"items":[1,"two",{"three":3}],"_queue":"wfq","_priority":2,"_max_attempts":5}`))
	require.NoError(t, err)
	wf := &driver.Workflow{ID: 42, CurrentStep: 1}
	items := []any{int64(1), "two", phpjson.NewObject()}
	for name, def := range branchDefs(t) {
		payload := func(i int) *phpjson.Object {
			meta := phpjson.NewObject()
			meta.Set("item_index", int64(i))
			meta.Set("item", items[i])
			p := phpjson.NewObject()
			p.Set(forEachKey, meta)
			return p
		}
		m := s.stepJobMaker(wf, state, def, "Item", 1, 1, now, -1)
		var made []*driver.Job
		for i := range items {
			j, _ := m.job(payload(i))
			made = append(made, j)
			want := s.stepJob(wf, state, def, "Item", payload(i), 1, 1, now, -1)
			require.Equal(t, want, j, "%s, item %d", name, i)
			require.Equal(t, string(want.Payload), string(j.Payload), "%s, item %d", name, i)
		}
		require.NotSame(t, made[0].StepIndex, made[1].StepIndex, name)
	}
}

// BenchmarkForEachBranchJobs builds the jobs of a 10-item expansion:
// one jobMaker for all, against stepJob for each (the old way).
func BenchmarkForEachBranchJobs(b *testing.B) {
	core := &deadlineCore{}
	s := New(nil, Config{Clock: fixedClock{now}, Logger: slog.New(slog.DiscardHandler), Core: core})
	state, _ := phpjson.DecodeObject([]byte(`{"items":[0,1,2,3,4,5,6,7,8,9]}`))
	def, _ := phpjson.DecodeObject([]byte(`{"type":"for_each","name":"fan","class":"Item","items_key":"items","timeout":30}`))
	wf := &driver.Workflow{ID: 42}
	payload := func(i int) *phpjson.Object {
		meta := phpjson.NewObject()
		meta.Set("item_index", int64(i))
		meta.Set("item", int64(i))
		p := phpjson.NewObject()
		p.Set(forEachKey, meta)
		return p
	}
	b.Run("maker", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := s.stepJobMaker(wf, state, def, "Item", 0, 1, now, -1)
			for i := range 10 {
				m.job(payload(i))
			}
		}
	})
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range 10 {
				s.stepJob(wf, state, def, "Item", payload(i), 0, 1, now, -1)
			}
		}
	})
}
