package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestLiveRateLimitSharedWithPHP runs a Queuety PHP worker (its own
// Worker::run loop, its RateLimiter, the limit from the handler's
// config()) and a Go worker (worker.RateLimit) on one handler limited to 3
// starts per 3 s, on one queue, and checks the starts from the rows.
//
// PHP starts first and fills the window. The Go worker, started then,
// counts PHP's 'started' log rows (at their second, so as if at its end)
// and starts nothing until they left the window. From then on Go keeps the
// window full, and PHP, which counts the 'completed' log rows of the
// window each time its window restarts (every 3 s), finds it full and
// starts nothing more. Queuety PHP's check is not atomic and is refreshed
// only when its window restarts, so a refresh that falls between a Go
// claim and the completion it logs lets PHP start up to its limit more:
// the documented slack of a mixed fleet is one window's worth.
func TestLiveRateLimitSharedWithPHP(t *testing.T) {
	const (
		handler = "rl.shared"
		max     = 3
		window  = 3 * time.Second
		phpRun  = 14 // seconds the PHP worker loop runs
	)
	c, php := newLive(t)
	ctx := context.Background()
	for i := range 40 {
		_, err := c.Dispatch(ctx, handler, queuety.State{"i": i}, queuety.OnQueue("rl"))
		require.NoError(t, err)
	}

	boot := "require '" + strings.ReplaceAll(php.lib, "'", `\'`) + "'; \\QueuetyGoInterop\\boot();\n"
	cmd := exec.Command("php", "-r", boot+`
final class RateShared implements \Queuety\Handler {
	public static int $ran = 0;
	public function handle( array $payload ): void { ++self::$ran; echo "ran\n"; }
	public function config(): array { return array( 'rate_limit' => array( 3, 3 ) ); }
}
\Queuety\Queuety::register( 'rl.shared', RateShared::class );
$worker = \Queuety\Queuety::worker();
$end    = microtime( true ) + `+itoa(phpRun)+`;
$polls  = 0;
while ( microtime( true ) < $end ) {
	$before = RateShared::$ran;
	$worker->run( 'rl', true ); // one claim: run it, or unclaim it when rate-limited
	++$polls;
	if ( RateShared::$ran === $before ) {
		sleep( \Queuety\Config::worker_sleep() ); // as Worker::run does when limited
	}
}
echo json_encode( array( 'ran' => RateShared::$ran, 'polls' => $polls ) ), "\n";`)
	cmd.Env = php.env
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	ranPHP := make(chan struct{}, 100)
	var summary struct {
		Ran   int `json:"ran"`
		Polls int `json:"polls"`
	}
	phpDone := make(chan struct{})
	go func() {
		defer close(phpDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); line == "ran" {
				ranPHP <- struct{}{}
			} else {
				_ = json.Unmarshal([]byte(line), &summary)
			}
		}
	}()
	for range max {
		select {
		case <-ranPHP:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("PHP did not run %d jobs within a minute\n%s", max, stderr.String())
		}
	}

	// PHP filled the window: now the Go worker.
	var mu sync.Mutex
	var goRan []int64
	w := worker.New(c, worker.Queues("rl"), worker.RateLimit(handler, max, window), worker.NoMaintenance(),
		worker.Concurrency(4), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleJob(handler, func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		goRan = append(goRan, info.JobID)
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	goDone := make(chan error, 1)
	go func() { goDone <- w.Run(runCtx) }()
	<-phpDone
	require.NoError(t, cmd.Wait(), "php worker\n%s", stderr.String())
	stop()
	require.NoError(t, <-goDone, "go worker")

	// Who started what, when: PHP's jobs are the started rows Go did not run.
	logs, err := c.Logs(ctx, driver.LogFilter{Event: driver.LogStarted, Limit: 1000})
	require.NoError(t, err)
	mu.Lock()
	goIDs := slices.Clone(goRan)
	mu.Unlock()
	var phpStarts, goStarts []time.Time
	for _, l := range logs {
		if slices.Contains(goIDs, *l.JobID) {
			goStarts = append(goStarts, l.CreatedAt)
		} else {
			phpStarts = append(phpStarts, l.CreatedAt)
		}
	}
	t.Logf("PHP: %d starts in %d polls at %v; Go: %d starts at %v", summary.Ran, summary.Polls, seconds(phpStarts), len(goStarts), seconds(goStarts))
	require.Len(t, phpStarts, summary.Ran, "PHP's started rows")
	require.GreaterOrEqual(t, len(phpStarts), max, "PHP's first window")
	require.NotEmpty(t, goStarts, "Go's starts")

	// Go honoured PHP's starts: nothing before PHP's first window had left.
	assert.False(t, goStarts[0].Before(phpStarts[0].Add(window)), "Go's first start (%s) at least one window after PHP's (%s)",
		goStarts[0].Format(time.TimeOnly), phpStarts[0].Format(time.TimeOnly))
	// Go's own starts keep its window: max per window (log rows are whole
	// seconds, so a window of stamps spans up to one second more).
	for i := max; i < len(goStarts); i++ {
		assert.GreaterOrEqual(t, goStarts[i].Sub(goStarts[i-max]), window-time.Second, "Go start %d after start %d", i, i-max)
	}
	// PHP honoured Go's: alone it would have started about max per window
	// for the whole loop; it polled all along, and started at most one
	// window's worth more than its first.
	assert.Greater(t, summary.Polls, phpRun/2, "PHP kept polling")
	assert.LessOrEqual(t, summary.Ran, 2*max, "PHP's starts with Go filling the window")
	// Together: about max per window over the run, never twice the rate.
	span := goStarts[len(goStarts)-1].Sub(phpStarts[0])
	assert.LessOrEqual(t, len(goStarts)+len(phpStarts), (int(span/window)+1)*max+max, "starts over %s", span)

	// No job was lost, retried or buried by the limits.
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: "rl", Limit: 100})
	require.NoError(t, err)
	for _, j := range jobs {
		switch j.Status {
		case queuetytype.JobCompleted:
			assert.Equalf(t, 1, j.Attempts, "job %d attempts", j.ID)
		case queuetytype.JobPending:
			assert.Zerof(t, j.Attempts, "pending job %d attempts (PHP's unclaim gives them back)", j.ID)
		default:
			t.Errorf("job %d is %s: %s", j.ID, j.Status, j.ErrorMessage)
		}
	}
}

func seconds(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format("05")
	}
	return out
}
