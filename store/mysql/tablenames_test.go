package mysql_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/storetest"
)

// renamedTables are table-name DSN parameters that rename half of
// Queuety's tables one by one and move the rest, and the Go engine's
// tables, under another table prefix.
const renamedTables = "table_prefix=fleet&table_jobs=jobrows&table_workflows=wf&table_logs=joblog" +
	"&table_schedules=cron_rows&table_signals=sig&table_locks=mutex&table_batches=batchrows&table_webhooks=hooks"

// TestParseDSNTableNames: the table-name parameters and environment
// variables name the tables as Queuety PHP's QUEUETY_TABLE_PREFIX and
// QUEUETY_TABLE_* constants do, the DSN before the environment.
func TestParseDSNTableNames(t *testing.T) {
	names := func(t *testing.T, dsn string) (string, map[string]string) {
		t.Helper()
		c, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		return c.TablePrefix, c.Tables
	}
	unset := func(t *testing.T) {
		for _, v := range []string{"QUEUETY_TABLE_PREFIX", "QUEUETY_TABLE_JOBS", "QUEUETY_TABLE_LOGS"} {
			t.Setenv(v, "x") // registers the restore
			require.NoError(t, os.Unsetenv(v))
		}
	}
	t.Run("defaults", func(t *testing.T) {
		unset(t)
		p, o := names(t, "mysql://root@127.0.0.1/db")
		assert.Equal(t, "queuety_", p)
		assert.Empty(t, o)
	})
	t.Run("DSN parameters, both forms", func(t *testing.T) {
		unset(t)
		for _, dsn := range []string{
			"mysql://root@127.0.0.1/db?table_prefix=themequeue&table_jobs=my_jobs",
			"root@tcp(127.0.0.1:3306)/db?table_prefix=themequeue_&table_jobs=my_jobs",
		} {
			p, o := names(t, dsn)
			assert.Equal(t, "themequeue_", p, dsn)
			assert.Equal(t, map[string]string{"jobs": "my_jobs"}, o, dsn)
		}
	})
	t.Run("environment", func(t *testing.T) {
		unset(t)
		t.Setenv("QUEUETY_TABLE_PREFIX", " envq__ ")
		t.Setenv("QUEUETY_TABLE_LOGS", "env_logs")
		p, o := names(t, "mysql://root@127.0.0.1/db")
		assert.Equal(t, "envq_", p, "trimmed, one trailing underscore, as PHP does")
		assert.Equal(t, map[string]string{"logs": "env_logs"}, o)
		// The DSN wins over the environment, setting by setting.
		p, o = names(t, "mysql://root@127.0.0.1/db?table_prefix=dsnq_&table_jobs=dsn_jobs")
		assert.Equal(t, "dsnq_", p)
		assert.Equal(t, map[string]string{"jobs": "dsn_jobs", "logs": "env_logs"}, o)
		// An empty table prefix means none, as a PHP constant defined as ''.
		t.Setenv("QUEUETY_TABLE_PREFIX", "")
		p, _ = names(t, "mysql://root@127.0.0.1/db")
		assert.Equal(t, "", p)
	})
	t.Run("errors", func(t *testing.T) {
		unset(t)
		for dsn, want := range map[string]string{
			"mysql://root@127.0.0.1/db?table_jobz=x":                            "unknown DSN parameter table_jobz",
			"mysql://root@127.0.0.1/db?table_jobs=my-jobs":                      `table name "my-jobs" for jobs (table_jobs, QUEUETY_TABLE_JOBS) must be ASCII letters, digits and underscores`,
			"mysql://root@127.0.0.1/db?table_jobs=a%60%3BDROP":                  "must be ASCII letters",
			"mysql://root@127.0.0.1/db?table_jobs=":                             "table name for jobs (table_jobs, QUEUETY_TABLE_JOBS) is empty",
			"mysql://root@127.0.0.1/db?table_prefix=bad-prefix":                 `table prefix "bad-prefix_" (table_prefix, QUEUETY_TABLE_PREFIX) must match`,
			"mysql://root@127.0.0.1/db?table_jobs=x&table_logs=x":               `would both be named "wp_x"`,
			"mysql://root@127.0.0.1/db?table_jobs=queuety_logs":                 `would both be named "wp_queuety_logs"`,
			"mysql://root@127.0.0.1/db?table_jobs=queuety_go_failures":          `would both be named "wp_queuety_go_failures"`,
			"mysql://root@127.0.0.1/db?table_jobs=" + strings.Repeat("j", 62):   "is 65 characters with the prefix; MySQL allows 64",
			"mysql://root@127.0.0.1/db?table_jobs=a&table_jobs=b":               "DSN parameter table_jobs is given 2 times",
			"root@tcp(127.0.0.1:3306)/db?table_workflow_events=we&table_nope=1": "unknown DSN parameter table_nope",
		} {
			_, err := mysql.ParseDSN(dsn)
			require.Error(t, err, dsn)
			assert.ErrorIs(t, err, driver.ErrInvalidArgument, dsn)
			assert.ErrorContains(t, err, want, dsn)
		}
		t.Setenv("QUEUETY_TABLE_JOBS", "env jobs")
		_, err := mysql.ParseDSN("mysql://root@127.0.0.1/db")
		assert.ErrorContains(t, err, `table name "env jobs" for jobs`)
	})
}

// renamedHarness gives every case a fresh prefix whose tables are named
// by renamedTables.
var renamedHarness = storetest.Harness{DSN: func(tb testing.TB) string {
	dsn, _ := migrated.DSNWith(tb, renamedTables)
	return dsn
}}

// TestRenamedTables runs the driver suite and the acceptance cases of
// every table on tables named by renamedTables, and checks that the store
// created and used those tables, not Queuety's default names.
func TestRenamedTables(t *testing.T) {
	t.Parallel()
	t.Run("names", func(t *testing.T) {
		t.Parallel()
		dsn, prefix := migrated.DSNWith(t, renamedTables)
		c, err := queuety.Open(context.Background(), dsn)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Dispatch(context.Background(), "renamed.job", nil)
		require.NoError(t, err)
		tables, err := testdb.Tables(testdb.Admin(t), prefix)
		require.NoError(t, err)
		var got []string
		for _, n := range tables {
			got = append(got, strings.TrimPrefix(n, prefix))
		}
		assert.ElementsMatch(t, []string{
			"jobrows", "wf", "joblog", "cron_rows", "sig", "mutex", "batchrows", "hooks",
			"fleet_queue_states", "fleet_workflow_dependencies", "fleet_workflow_dispatch_keys", "fleet_chunks",
			"fleet_workflow_events", "fleet_artifacts", "fleet_state_machines", "fleet_state_machine_events",
			"fleet_go_failures", "fleet_go_migrations", "fleet_go_batch_events", "fleet_go_limits",
			"fleet_go_rate_starts", "fleet_go_webhook_secrets", "fleet_go_workflow_ends", "fleet_go_machine_timers", "fleet_go_workers",
			"fleet_go_held_claims",
		}, got)
		var n int
		require.NoError(t, testdb.Admin(t).QueryRow("SELECT COUNT(*) FROM `"+prefix+"jobrows` WHERE handler = 'renamed.job'").Scan(&n))
		assert.Equal(t, 1, n, "the job is in the renamed jobs table")
		assert.Equal(t, prefix+"jobrows", clientseamTables(c).Jobs)
	})
	t.Run("driver", func(t *testing.T) {
		t.Parallel()
		storetest.RunDriver(t, renamedHarness)
	})
	t.Run("acceptance", func(t *testing.T) {
		t.Parallel()
		storetest.RunAcceptanceOf(t, renamedHarness, "Jobs/", "Workflows/", "Schedules/", "Batches/", "Chains/",
			"Limits/", "Signals/", "Webhooks/", "Compensation/", "Artifacts/", "Middleware/", "Operate/", "WaitWorkflows/")
	})
}

// clientseamTables returns the table names of c's store.
func clientseamTables(c *queuety.Client) struct{ Jobs string } {
	s, ok := clientseam.StoreOf(c).(*mysql.Store)
	if !ok {
		return struct{ Jobs string }{}
	}
	return struct{ Jobs string }{s.T.Jobs}
}
