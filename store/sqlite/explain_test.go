package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/sqlite"
)

// queryPlan returns EXPLAIN QUERY PLAN's lines for query, one per step.
func queryPlan(t *testing.T, s *sqlite.Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.DB.Query("EXPLAIN QUERY PLAN "+query, args...)
	require.NoErrorf(t, err, "explain %s", query)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		out = append(out, detail)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestHotQueriesReadTheirIndexes: the claim, the stale sweep, the activity
// deadline sweep, the lookups on nullable columns and the pages of a
// workflow's signals, failures and artifacts read the index meant for them, partial ones included (version 6), statements on rows by id
// read them by rowid, and none sorts.
func TestHotQueriesReadTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ds, err := driver.Open(ctx, harness.DSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	s := ds.(*sqlite.Store)
	jobs, logs := "queuety_jobs", "queuety_logs"
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	for _, q := range []struct {
		name, sql, index string
		args             []any
	}{
		{"claim", s.SQL.Claim(2), jobs + "_idx_go_claim", []any{"default", now, "a", "b", "default", 100}},
		{"claim with admission", s.SQL.ClaimWith(1, 2, true), jobs + "_idx_go_claim", []any{"default", now, "a", "default", "g1", "g2", 5, 100}},
		{"has due", s.SQL.HasDue(1), jobs + "_idx_(go_claim|queue_status_available)", []any{"default", now, "a", "default"}},
		{"oldest due", s.SQL.OldestDue, jobs + "_idx_queue_status_available", []any{"default", now}},
		{"stale", s.SQL.Stale, jobs + "_idx_reserved", []any{now, now, 100}},
		{"stale without claim time", s.SQL.StaleUnreserved, jobs + "_idx_reserved", []any{100}},
		{"running positions", s.SQL.RunningPositions, "queuety_workflows_idx_status", []any{0, 500}},
		{"schedule-to-close", s.SQL.TimedOut[0], jobs + "_idx_go_schedule_to_close", []any{now, 100}},
		{"schedule-to-start", s.SQL.TimedOut[1], jobs + "_idx_go_schedule_to_start", []any{now, 100}},
		{"heartbeat", s.SQL.TimedOut[2], jobs + "_idx_go_heartbeat", []any{now, 100}},
		{"start-to-close", s.SQL.TimedOut[3], jobs + "_idx_go_start_to_close", []any{now, 100}},
		{"unique", "SELECT id FROM " + jobs + " WHERE handler = ? AND payload_hash = ? AND status IN ('pending', 'processing') ORDER BY id LIMIT 1", jobs + "_idx_unique", []any{"h", "x"}},
		{"unique orders", "SELECT id FROM " + jobs + " WHERE handler = ? AND payload_hash IN (?, ?, ?) AND status IN ('pending', 'processing') ORDER BY id LIMIT 1", jobs + "_idx_unique", []any{"h", "x", "y", "z"}},
		{"unique candidates", "SELECT id, payload FROM " + jobs + " WHERE handler = ? AND payload_hash IS NOT NULL AND status IN ('pending', 'processing') AND OCTET_LENGTH(payload) = ? ORDER BY id", jobs + "_idx_(handler_status|unique)", []any{"h", 13}},
		{"group usage", "SELECT concurrency_group, COUNT(*) FROM " + jobs + " WHERE concurrency_group IN (?, ?) AND status = 'processing' GROUP BY concurrency_group", jobs + "_idx_group_status", []any{"a", "b"}},
		{"dependents", "SELECT id FROM " + jobs + " WHERE depends_on = ?", jobs + "_idx_depends", []any{1}},
		{"highest depends_on", s.SQL.DependsOnMax, jobs + "_idx_depends", nil},
		{"pending dependents", s.SQL.PendingDependents(3), jobs + "_idx_depends", []any{1, 2, 3}},
		{"batch", "SELECT id FROM " + jobs + " WHERE batch_id = ?", jobs + "_idx_batch", []any{1}},
		{"claim update", "UPDATE " + jobs + s.D.ByID + " SET status = 'processing', reserved_at = ? WHERE id IN (?, ?, ?) AND status = 'pending'", "PRIMARY KEY", []any{now, 1, 2, 3}},
		{"completion", "UPDATE " + jobs + s.D.ByID + " SET status = 'completed', completed_at = ? WHERE id IN (?, ?, ?) AND status = 'processing' AND claim_token = ?", "PRIMARY KEY", []any{now, 1, 2, 3, 4}},
		{"job by id", "SELECT id FROM " + jobs + s.D.ByID + " WHERE id = ? AND status = 'pending'", "PRIMARY KEY", []any{1}},
		{"workflow logs", "SELECT id FROM " + logs + " WHERE workflow_id = ? ORDER BY id", logs + "_idx_workflow", []any{1}},
		{"signal page", s.SQL.SignalPage(driver.SignalQuery{WorkflowID: 1, Limit: 200, MaxPayloadBytes: 4096}), "queuety_signals_idx_go_workflow", []any{1}},
		{"failure page", s.SQL.FailurePage(driver.FailureQuery{WorkflowID: 1, Limit: 200, MaxMessageChars: 4096}), "queuety_go_failures_idx_workflow", []any{1}},
		{"failure counts", s.SQL.FailureCounts, "queuety_go_failures_idx_workflow_category", []any{1}},
		{"artifact page", s.SQL.ArtifactPage(driver.ArtifactQuery{WorkflowID: 1, Limit: 500, MaxValueBytes: -1}), "queuety_artifacts_idx_workflow_key", []any{1}},
	} {
		p := queryPlan(t, s, q.sql, q.args...)
		t.Logf("%s: %s", q.name, strings.Join(p, " | "))
		require.NotEmptyf(t, p, "%s: plan", q.name)
		want := "USING (COVERING )?INDEX " + q.index + " "
		if q.index == "PRIMARY KEY" {
			want = "USING INTEGER PRIMARY KEY" // rowid lookups, whatever else the statement tests
		}
		assert.Regexpf(t, want, p[0], "%s: first step", q.name)
		if strings.HasPrefix(q.name, "unique") {
			continue // the matching rows of two statuses (and several hashes), merged by id
		}
		for _, step := range p {
			assert.NotContainsf(t, step, "TEMP B-TREE", "%s: sorts", q.name)
		}
	}
}
