package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestLiteralsWriteTheSameRows: the rows a step's batch writes (the
// workflow, its events, the next jobs, the workflows' guarded and plain
// multi-row updates) are the same whether the values are written into
// the statements as literals (the default) or all passed as parameters
// (a DSN with timeTruncate), for plain values and for those that need
// escaping or have no literal (quotes, backslashes, '?', non-ASCII, line
// breaks, empty strings, NULLs, fractions of a second), and read back as
// they were written.
func TestLiteralsWriteTheSameRows(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	open := func(dsn string) *mysql.Store {
		t.Helper()
		cfg, err := mysql.ParseDSN(dsn + "&wake=false")
		require.NoError(t, err)
		st, err := mysql.OpenConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	literal, bound := open(dsn), open(dsn+"&timeTruncate=1us")
	at := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	frac := at.Add(123456 * time.Microsecond)
	texts := []string{"plain", `{"n":1,"s":"a b"}`, `it's`, `{"p":"a\\/b"}`, "why?", "é €", "line\nbreak", ""}

	write := func(st *mysql.Store, tag string) []int64 {
		t.Helper()
		var ids []int64
		require.NoError(t, st.InTx(ctx, func(tx driver.Tx) error {
			var wfs []*driver.Workflow
			for i, s := range texts {
				wf := &driver.Workflow{Name: tag + s, Status: driver.WorkflowRunning, State: []byte(fmt.Sprintf(`{"s":%q}`, s)),
					TotalSteps: 3, StartedAt: at, RunNumber: 1, RunStartedAt: frac}
				if i%2 == 1 {
					wf.WaitDeadlineAt = frac
				}
				if err := tx.WorkflowInsert(ctx, wf); err != nil {
					return err
				}
				wfs = append(wfs, wf)
				ids = append(ids, wf.ID)
			}
			var jobs []*driver.Job
			var events []*driver.WorkflowEvent
			for i, wf := range wfs {
				s := texts[i]
				step := i % 3
				attempt := 1
				dur := int64(i * 1000)
				jobs = append(jobs, &driver.Job{Queue: "q" + s, Handler: s + "\\Handler", Payload: []byte(fmt.Sprintf(`{"x":%q}`, s)),
					PayloadHash: s, Priority: queuetytype.Priority(i), Attempts: 1, MaxAttempts: 3, AvailableAt: at, WorkflowID: wf.ID, StepIndex: &step,
					ConcurrencyGroup: s, ConcurrencyLimit: i, CostUnits: 1, CreatedAt: at, ScheduleToCloseAt: frac,
					Status: driver.JobProcessing, ReservedAt: at, ClaimToken: 1<<62 + int64(i), StartToCloseAt: frac})
				events = append(events, &driver.WorkflowEvent{WorkflowID: wf.ID, JobID: wf.ID, StepIndex: step, StepName: s, StepType: "single",
					Handler: s, Event: "step_completed", Queue: s, Attempt: &attempt, Input: wf.State, Output: []byte(`{"o":"` + s + `"}`),
					StateBefore: wf.State, StateAfter: []byte(s), Context: []byte{}, Error: []byte(s), DurationMS: &dur, CreatedAt: at})
			}
			if err := tx.JobInsert(ctx, jobs); err != nil {
				return err
			}
			if err := tx.EventInsert(ctx, events); err != nil {
				return err
			}
			advances := make([]driver.WorkflowAdvance, len(wfs))
			for i, wf := range wfs {
				next := *wf
				next.Status, next.CurrentStep, next.State = driver.WorkflowStatus([]string{"running", "completed"}[i%2]), 1, []byte(`{"next":"`+texts[(i+1)%len(texts)]+`"}`)
				if i%2 == 1 {
					next.CompletedAt = at
				}
				advances[i] = driver.WorkflowAdvance{Workflow: &next, FromStatus: wf.Status, FromStep: wf.CurrentStep, FromState: wf.State}
			}
			adv, ok := tx.(driver.WorkflowAdvanceTx)
			require.True(t, ok)
			n, err := adv.WorkflowAdvanceMany(ctx, advances)
			if err != nil {
				return err
			}
			require.Equal(t, int64(len(wfs)), n, "every guard matched")
			n, err = adv.WorkflowAdvanceMany(ctx, advances)
			require.Equal(t, int64(0), n, "a guard holding the old state matches nothing")
			if err != nil {
				return err
			}
			for i, a := range advances {
				a.Workflow.ErrorMessage = texts[len(texts)-1-i]
				a.Workflow.DeadlineAt = at
			}
			return tx.WorkflowUpdateMany(ctx, []*driver.Workflow{advances[0].Workflow, advances[2].Workflow, advances[3].Workflow})
		}))
		return ids
	}
	rows := func(ids []int64) []string {
		t.Helper()
		in := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids)), ","), "[]")
		var out []string
		for _, q := range []string{
			"SELECT status, state, current_step, total_steps, started_at, completed_at, error_message, deadline_at, run_number, run_started_at, wait_deadline_at, id - %d FROM " + prefix + "queuety_workflows WHERE id IN (%s) ORDER BY id",
			"SELECT queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, available_at, workflow_id - %d, step_index, concurrency_group, concurrency_limit, cost_units, created_at, schedule_to_close_at, reserved_at, claim_token, start_to_close_at FROM " + prefix + "queuety_jobs WHERE workflow_id IN (%s) ORDER BY id",
			"SELECT job_id - %d, step_index, step_name, step_type, handler, event, queue, attempt, input, output, state_before, state_after, context, error, duration_ms, created_at FROM " + prefix + "queuety_workflow_events WHERE workflow_id IN (%s) ORDER BY id",
		} {
			r, err := literal.DB.QueryContext(ctx, fmt.Sprintf(q, ids[0], in))
			require.NoError(t, err)
			cols, _ := r.Columns()
			for r.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				require.NoError(t, r.Scan(ptrs...))
				out = append(out, fmt.Sprint(vals))
			}
			require.NoError(t, r.Err())
			r.Close()
		}
		return out
	}
	a := rows(write(literal, "w"))
	b := rows(write(bound, "w"))
	require.Len(t, a, 3*len(texts))
	assert.Equal(t, b, a, "the rows written with literals and with parameters")
	joined := strings.Join(a, "\n")
	for _, s := range texts[:len(texts)-1] {
		assert.Contains(t, joined, s)
	}
	assert.Contains(t, joined, "{\"next\":\"line\nbreak\"}")
	assert.Contains(t, joined, "2026-11-29T01:02:03.123456Z")
}

// TestStepBatchSendsNoParameters: on a DSN whose parameters the server
// binds (interpolateParams=false), where each statement with parameters
// is prepared and closed again, a batch of completed steps prepares
// none: the workflows' update, the next jobs and the events carry their
// values in their text, and the claim's, the completion's and the log
// rows' statements stay prepared from the batch before.
func TestStepBatchSendsNoParameters(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn+"&wake=false&interpolateParams=false", queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	st := clientseam.StoreOf(c).(*mysql.Store)
	e := clientseam.Engine(c)
	const n = 8
	def := queuety.WorkflowDefinition{Name: "literal_batch", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"},
	}}
	for i := range 2 * n {
		_, err := c.DispatchWorkflow(ctx, def, queuety.State{"n": i})
		require.NoError(t, err)
	}
	st.DB.SetMaxOpenConns(1) // the session counter below is the batch's own
	prepares := func() int64 {
		t.Helper()
		var name string
		var v int64
		require.NoError(t, st.DB.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &v))
		return v
	}
	batch := func() int64 {
		t.Helper()
		claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{driver.DefaultQueue}, Handlers: []string{"s"}, Limit: n})
		require.NoError(t, err)
		require.Len(t, claimed, n)
		results := make([]*engine.Result, n)
		for i, cj := range claimed {
			results[i] = &engine.Result{Claimed: cj, Output: engine.State{"out": i}, StartedAt: time.Now()}
		}
		before := prepares()
		errs, err := e.CompleteSteps(ctx, results)
		require.NoError(t, err)
		for _, err := range errs {
			require.NoError(t, err)
		}
		return prepares() - before
	}
	batch() // prepares the hot statements for the next batch of the same size
	assert.Equal(t, int64(0), batch(), "statements prepared for a batch of completed steps")
}
