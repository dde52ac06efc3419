package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
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

// livePHP runs real Queuety PHP 0.22 through the project's driver,
// interop/php/driver.php, against one table prefix of the test server. The
// Queuety tree is ../shared/queuety-php beside the repository. The tests
// that use it skip when PHP or the tree is missing, except under CI=true,
// where .ci/run installs PHP and the tree must be there.
type livePHP struct {
	t      *testing.T
	script string // interop/php/driver.php
	lib    string // interop/php/lib.php, for test-local PHP code
	env    []string
}

func newLivePHP(t *testing.T, prefix string) *livePHP {
	t.Helper()
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	src := filepath.Join(filepath.Dir(repo), "shared", "queuety-php")
	script := filepath.Join(repo, "interop", "php", "driver.php")
	_, phpErr := exec.LookPath("php")
	_, srcErr := os.Stat(filepath.Join(src, "src"))
	_, scriptErr := os.Stat(script)
	if phpErr != nil || srcErr != nil || scriptErr != nil {
		msg := "live interop needs php, ../shared/queuety-php and interop/php/driver.php"
		if os.Getenv("CI") == "true" {
			require.FailNow(t, msg, "php: %v; tree: %v; driver: %v", phpErr, srcErr, scriptErr)
		}
		t.Skip(msg)
	}
	return &livePHP{t: t, script: script, lib: filepath.Join(repo, "interop", "php", "lib.php"), env: append(os.Environ(),
		"QUEUETY_SRC="+src, "QUEUETY_DB_HOST=127.0.0.1:3306", "QUEUETY_DB_NAME=test",
		"QUEUETY_DB_USER=root", "QUEUETY_DB_PASS=", "QUEUETY_DB_PREFIX="+prefix)}
}

// exec runs php with args and returns its standard output, or an error
// with its standard error. It is safe to call from any goroutine.
func (p *livePHP) exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "php", args...)
	cmd.Env = p.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("php %v: %w\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	return string(out), nil
}

// run runs one driver command and returns its standard output.
func (p *livePHP) run(args ...string) string {
	p.t.Helper()
	out, err := p.exec(append([]string{p.script}, args...)...)
	require.NoError(p.t, err)
	return out
}

// runJSON runs one driver command and decodes its JSON output into v.
func (p *livePHP) runJSON(v any, args ...string) {
	p.t.Helper()
	out := p.run(args...)
	require.NoError(p.t, json.Unmarshal([]byte(out), v), "php %v printed %s", args, out)
}

// eval runs PHP code after the driver's boot (Queuety initialised on the
// prefix's tables, the QueuetyGoInterop handlers loaded), for what the
// driver has no command for.
func (p *livePHP) eval(code string) string {
	p.t.Helper()
	boot := "require '" + strings.ReplaceAll(p.lib, "'", `\'`) + "'; \\QueuetyGoInterop\\boot();\n"
	out, err := p.exec("-r", boot+code)
	require.NoError(p.t, err)
	return out
}

// newLive opens a Go client and the PHP driver on one fresh table prefix.
func newLive(t *testing.T) (*queuety.Client, *livePHP) {
	t.Helper()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix) // skips before anything is opened
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, php
}

// interopWorker is a quiet Go worker on c with the Go twins of the PHP
// interop steps Increment, FailStep and Finish (interop/php/handlers.php),
// and opts.
func interopWorker(c *queuety.Client, opts ...worker.Option) *worker.Worker {
	w := worker.New(c, append([]worker.Option{worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	w.HandleStep(`QueuetyGoInterop\Increment`, func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	})
	w.HandleStep(`QueuetyGoInterop\FailStep`, func(context.Context, queuety.State) (queuety.State, error) {
		return nil, queuety.NonRetryable(errors.New("child failed"))
	})
	w.HandleStep(`QueuetyGoInterop\Finish`, func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"finished": true}, nil
	})
	return w
}

// TestLivePHPAndGoShareTheQueue runs real Queuety PHP next to a Go worker
// on one set of tables: jobs PHP dispatched are run by Go, and jobs and a
// three-step workflow Go dispatched are run by PHP.
func TestLivePHPAndGoShareTheQueue(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	php := newLivePHP(t, prefix)

	// PHP dispatches, Go runs. (The driver dispatches workflows only.)
	php.eval(`for ($i = 1; $i <= 5; $i++) { \Queuety\Queuety::dispatch('noop', ['i' => $i])->on_queue('to-go'); }`)
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
	assert.Equal(t, int64(5), st.Succeeded, "PHP-dispatched jobs completed by Go")
	assert.ElementsMatch(t, []int64{1, 2, 3, 4, 5}, ran, "payloads PHP wrote, as Go read them")
	done, err := c.ListJobs(ctx, driver.JobFilter{Queue: "to-go", Status: queuetytype.JobCompleted})
	require.NoError(t, err)
	assert.Len(t, done, 5, "completed rows")

	// Go dispatches, PHP runs.
	for i := range 4 {
		_, err := c.Dispatch(ctx, "noop", queuety.State{"i": i}, queuety.OnQueue("to-php"))
		require.NoError(t, err)
	}
	wf, err := builder.Workflow("live_three_step").OnQueue("to-php").
		Then(hFinish).Then(hFinish).Then(hFinish).
		Dispatch(ctx, c, queuety.State{"n": 1})
	require.NoError(t, err)
	var worked struct {
		Processed int `json:"processed"`
	}
	// The driver's handlers are workflow steps; the plain 'noop' jobs need
	// a Queuety\Handler registered under that name in the PHP process.
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
final class NoopJob implements \Queuety\Handler {
	public function handle( array $payload ): void {}
	public function config(): array { return array(); }
}
\Queuety\Queuety::register('noop', NoopJob::class);
echo json_encode(['processed' => \Queuety\Queuety::flush_queue('to-php')]);`)), &worked))
	assert.Equal(t, 7, worked.Processed, "jobs and steps PHP processed")

	jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: "to-php"})
	require.NoError(t, err)
	require.Len(t, jobs, 7, "4 jobs and 3 steps on the PHP queue")
	for _, j := range jobs {
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "job %d (%s) after PHP worked the queue: %s", j.ID, j.Handler, j.ErrorMessage)
	}
	d, err := c.DescribeWorkflow(ctx, wf)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, d.Status, "Go-dispatched workflow run by PHP")

	// PHP reads the Go rows back with its own code.
	var stats struct {
		Jobs      map[string]int `json:"jobs"`
		Workflows map[string]int `json:"workflows"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.run("stats")), &stats))
	assert.Equal(t, map[string]int{"completed": 12}, stats.Jobs, "jobs by status, as PHP counts them")
	assert.Equal(t, map[string]int{"completed": 1}, stats.Workflows, "workflows by status, as PHP counts them")
}
