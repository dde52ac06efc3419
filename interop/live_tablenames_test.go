package interop_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestLiveRenamedTablesShared: Queuety PHP with QUEUETY_TABLE_PREFIX and
// QUEUETY_TABLE_* constants, and Go with the same names as DSN parameters,
// share the renamed tables: jobs PHP dispatched run on Go, a job and a
// workflow Go dispatched run on PHP, and each reads the other's rows.
func TestLiveRenamedTablesShared(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	overrides := map[string]string{"jobs": "fleet_jobrows", "workflows": "fleet_wf", "logs": "fleet_joblog", "workflow_events": "fleet_events"}
	// PHP: the constants as a site defines them in wp-config.php.
	defines := "define('QUEUETY_TABLE_PREFIX', 'themequeue');\n"
	params := []string{"table_prefix=themequeue"}
	for base, name := range overrides {
		defines += "define('QUEUETY_TABLE_" + strings.ToUpper(base) + "', '" + name + "');\n"
		params = append(params, "table_"+base+"="+name)
	}
	evalPHP := func(code string) string {
		t.Helper()
		boot := "require '" + strings.ReplaceAll(php.lib, "'", `\'`) + "'; \\QueuetyGoInterop\\boot();\n"
		out, err := php.exec("-r", defines+boot+code)
		require.NoError(t, err)
		return out
	}
	// PHP creates its tables under the names first, as on a live site.
	var phpNames map[string]string
	require.NoError(t, json.Unmarshal([]byte(evalPHP(`echo json_encode(array(
		'jobs' => \Queuety\Queuety::connection()->table(\Queuety\Config::table_jobs()),
		'schedules' => \Queuety\Queuety::connection()->table(\Queuety\Config::table_schedules())));`)), &phpNames))
	assert.Equal(t, map[string]string{"jobs": prefix + "fleet_jobrows", "schedules": prefix + "themequeue_schedules"}, phpNames)

	c, err := queuety.Open(ctx, dsn+"&"+strings.Join(params, "&"), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	// No table under Queuety's default names exists: both sides use the
	// renamed ones.
	tables, err := testdb.Tables(testdb.Admin(t), prefix)
	require.NoError(t, err)
	for _, n := range tables {
		assert.False(t, strings.HasPrefix(n, prefix+"queuety_"), "table %s under the default names", n)
	}
	assert.Contains(t, tables, prefix+"themequeue_go_migrations", "the Go tables follow the table prefix")

	// PHP dispatches, Go runs.
	evalPHP(`for ($i = 1; $i <= 3; $i++) { \Queuety\Queuety::dispatch('noop', ['i' => $i])->on_queue('to-go'); }`)
	var mu sync.Mutex
	var ran []int64
	w := worker.New(c, worker.Queues("to-go"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleJob("noop", func(_ context.Context, p queuety.Payload) error {
		n, _ := p.Int("i")
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, n)
		return nil
	})
	st, err := w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.Succeeded, "PHP-dispatched jobs completed by Go")
	assert.ElementsMatch(t, []int64{1, 2, 3}, ran)

	// Go dispatches, PHP runs.
	_, err = c.Dispatch(ctx, "noop", queuety.State{"i": 9}, queuety.OnQueue("to-php"))
	require.NoError(t, err)
	wf, err := builder.Workflow("renamed_two_step").OnQueue("to-php").Then(hFinish).Then(hFinish).Dispatch(ctx, c, queuety.State{"n": 1})
	require.NoError(t, err)
	var worked struct {
		Processed int    `json:"processed"`
		Status    string `json:"status"`
		Jobs      int    `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(evalPHP(`
final class NoopJob implements \Queuety\Handler {
	public function handle( array $payload ): void {}
	public function config(): array { return array(); }
}
\Queuety\Queuety::register('noop', NoopJob::class);
$n = \Queuety\Queuety::flush_queue('to-php');
$table = \Queuety\Queuety::connection()->table(\Queuety\Config::table_jobs());
$jobs = (int) \Queuety\Queuety::connection()->pdo()->query("SELECT COUNT(*) FROM {$table} WHERE status = 'completed'")->fetchColumn();
echo json_encode(['processed' => $n, 'status' => \Queuety\Queuety::workflow_status(`+itoa(wf)+`)->status->value, 'jobs' => $jobs]);`)), &worked))
	assert.Equal(t, 3, worked.Processed, "the job and two steps PHP processed")
	assert.Equal(t, "completed", worked.Status, "the Go workflow as PHP reads it")
	assert.Equal(t, 6, worked.Jobs, "completed rows PHP counts in the renamed jobs table")

	d, err := c.DescribeWorkflow(ctx, wf)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, d.Status, "Go-dispatched workflow run by PHP")
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Status: queuetytype.JobCompleted})
	require.NoError(t, err)
	assert.Len(t, jobs, 6, "completed rows as Go reads them")
}
