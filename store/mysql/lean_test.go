package mysql_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/storetest"
)

// leanHarness gives every case a fresh prefix of tables migrated with
// schema=lean.
var leanHarness = storetest.Harness{DSN: func(tb testing.TB) string {
	dsn, _ := migrated.DSNWith(tb, "schema=lean")
	return dsn
}}

// indexSet is what the jobs and logs tables of a prefix carry: the
// secondary indexes of the jobs table that hold status (each rewritten by
// a claim and by a completion) and the logs table's secondary indexes
// (each written twice a job, for its started and completed rows) and the
// workflow events table's secondary indexes (each written twice a step).
type indexSet struct {
	jobsStatus []string
	logs       []string
	events     []string
}

func indexesOf(t *testing.T, prefix string) indexSet {
	t.Helper()
	db := testdb.Admin(t)
	var s indexSet
	for _, q := range []struct {
		into  *[]string
		table string
		where string
	}{
		{&s.jobsStatus, prefix + "queuety_jobs", " AND INDEX_NAME IN (SELECT INDEX_NAME FROM information_schema.STATISTICS" +
			" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'status')"},
		{&s.logs, prefix + "queuety_logs", " AND ? <> ''"},
		{&s.events, prefix + "queuety_workflow_events", " AND ? <> ''"},
	} {
		rows, err := db.Query("SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()"+
			" AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'"+q.where+" ORDER BY INDEX_NAME", q.table, q.table)
		require.NoError(t, err)
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			*q.into = append(*q.into, n)
		}
		require.NoError(t, rows.Close())
		require.NoError(t, rows.Err())
	}
	return s
}

// TestLeanSchemaIndexSet checks the index sets: Queuety PHP's (the
// default) holds status in nine secondary indexes of the jobs table and
// has six on the logs table and five on the workflow events table;
// schema=lean drops idx_queue_claim and idx_status from the jobs table,
// idx_handler from the logs table and idx_job and idx_step_name from the
// events table, and a store opened without it puts them back.
func TestLeanSchemaIndexSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	phpSet := indexSet{
		jobsStatus: []string{"idx_go_claim", "idx_group_status", "idx_handler_status", "idx_queue_claim", "idx_queue_status_available",
			"idx_reserved", "idx_status", "idx_status_completed", "idx_unique"},
		logs:   []string{"idx_created", "idx_event", "idx_go_handler_event", "idx_handler", "idx_job", "idx_workflow"},
		events: []string{"idx_created", "idx_job", "idx_step_name", "idx_timeline", "idx_workflow"},
	}
	leanSet := indexSet{
		jobsStatus: []string{"idx_go_claim", "idx_group_status", "idx_handler_status", "idx_queue_status_available",
			"idx_reserved", "idx_status_completed", "idx_unique"},
		logs:   []string{"idx_created", "idx_event", "idx_go_handler_event", "idx_job", "idx_workflow"},
		events: []string{"idx_created", "idx_timeline", "idx_workflow"},
	}
	assert.Equal(t, phpSet, indexesOf(t, prefix), "default index set")

	for _, step := range []struct {
		dsn, schema string
		want        indexSet
	}{
		{dsn + "&schema=lean", "lean", leanSet},
		{dsn + "&schema=lean", "lean", leanSet}, // already lean: nothing to do
		{dsn, "queuety", phpSet},                // put back
		{dsn + "&schema=queuety", "queuety", phpSet},
	} {
		c, err := queuety.Open(ctx, step.dsn)
		require.NoError(t, err)
		assert.Equal(t, step.schema, c.StoreInfo().Schema, "StoreInfo.Schema")
		require.NoError(t, c.Close())
		assert.Equal(t, step.want, indexesOf(t, prefix), "index set after opening with schema %s", step.schema)
	}

	_, err := mysql.ParseDSN(dsn + "&schema=php")
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "schema=php")
}

// TestLeanSchema runs the driver suite and the acceptance suite on tables
// with the lean index set.
func TestLeanSchema(t *testing.T) {
	t.Parallel()
	t.Run("driver", func(t *testing.T) {
		t.Parallel()
		storetest.RunDriver(t, leanHarness)
	})
	t.Run("acceptance", func(t *testing.T) {
		t.Parallel()
		storetest.RunAcceptance(t, leanHarness)
	})
}
