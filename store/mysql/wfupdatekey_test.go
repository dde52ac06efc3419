package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestWorkflowUpdatesReadByPrimaryKey: the multi-row updates of running
// workflows (a step batch's guarded advance, and the plain update of
// several rows) read their rows by primary key. Left to itself, MariaDB
// reads them through idx_status (status, id), the index of a column the
// update writes, and buffers the rows to read them again: three reads a
// row instead of one. The store runs on one connection, whose session
// counters are read around each update; the rows are still written.
func TestWorkflowUpdatesReadByPrimaryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	cfg, err := mysql.ParseDSN(dsn + "&wake=false")
	require.NoError(t, err)
	cfg.MaxOpenConns = 1 // the transactions and the status reads share a session
	s, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	table := prefix + "queuety_workflows"
	now := time.Now().UTC()
	insertRows(t, s.DB, table, wfCols, 1000, func(i int) string {
		return fmt.Sprintf(`('w','running','{"a":%d}',0,3,'%s',NULL,NULL)`, i, sqlTime(now))
	})
	var first int64
	require.NoError(t, s.DB.QueryRow("SELECT MIN(id) FROM "+table).Scan(&first))
	workflow := func(id int64) *driver.Workflow {
		return &driver.Workflow{ID: id, Name: "w", Status: driver.WorkflowRunning, State: []byte(fmt.Sprintf(`{"a":%d}`, id-first)),
			TotalSteps: 3, StartedAt: now.Truncate(time.Second)}
	}
	before := sessionReads(t, s.DB)
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		var advances []driver.WorkflowAdvance
		for id := first + 100; id < first+200; id++ {
			next := workflow(id)
			next.CurrentStep, next.State = 1, []byte(fmt.Sprintf(`{"b":%d}`, id))
			advances = append(advances, driver.WorkflowAdvance{Workflow: next, FromStatus: driver.WorkflowRunning, FromStep: 0, FromState: workflow(id).State})
		}
		n, err := tx.(driver.WorkflowAdvanceTx).WorkflowAdvanceMany(ctx, advances)
		assert.Equal(t, int64(100), n, "workflows advanced")
		return err
	}))
	advanceReads := sessionReads(t, s.DB) - before
	before = sessionReads(t, s.DB)
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		var wfs []*driver.Workflow
		for id := first + 300; id < first+400; id++ {
			wf := workflow(id)
			wf.ErrorMessage = fmt.Sprint("e", id)
			wfs = append(wfs, wf)
		}
		return tx.WorkflowUpdateMany(ctx, wfs)
	}))
	updateReads := sessionReads(t, s.DB) - before
	t.Logf("rows and entries read: advance of 100 workflows %d, update of 100 %d", advanceReads, updateReads)
	assert.LessOrEqual(t, advanceReads, int64(150), "reads to advance 100 workflows")
	assert.LessOrEqual(t, updateReads, int64(150), "reads to update 100 workflows")

	var advanced, updated int
	require.NoError(t, s.DB.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE current_step = 1 AND state LIKE '{\"b\":%'").Scan(&advanced))
	require.NoError(t, s.DB.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE error_message LIKE 'e%'").Scan(&updated))
	assert.Equal(t, 100, advanced, "rows advanced")
	assert.Equal(t, 100, updated, "rows updated")
}
