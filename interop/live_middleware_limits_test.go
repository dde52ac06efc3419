package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// holdUnique starts PHP running Queuety's UniqueJob(key) around a closure
// that prints "locked" and waits for a line on stdin.
func (p *livePHP) holdUnique(key string) *phpHolder {
	p.t.Helper()
	code := "require '" + strings.ReplaceAll(p.lib, "'", `\'`) + "'; \\QueuetyGoInterop\\boot();\n" + `
$mw = new \Queuety\Middleware\UniqueJob(` + phpString(key) + `);
$mw->handle(new \stdClass(), function (): void { echo "locked\n"; fflush(STDOUT); fgets(STDIN); });
echo "released\n";`
	cmd := exec.Command("php", "-r", code)
	cmd.Env = p.env
	stdin, err := cmd.StdinPipe()
	require.NoError(p.t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(p.t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(p.t, cmd.Start())
	h := &phpHolder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	p.t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := h.out.ReadString('\n')
	require.NoError(p.t, err, "PHP holding the lock: %s", stderr.String())
	require.Equal(p.t, "locked\n", line, "PHP: %s", stderr.String())
	return h
}

// phpUniqueRan runs a closure under PHP's UniqueJob(key) and reports
// whether it ran.
func (p *livePHP) phpUniqueRan(key string) bool {
	p.t.Helper()
	var out struct {
		Ran bool `json:"ran"`
	}
	require.NoError(p.t, json.Unmarshal([]byte(p.eval(`
$ran = false;
(new \Queuety\Middleware\UniqueJob(`+phpString(key)+`))->handle(new \stdClass(), function () use (&$ran): void { $ran = true; });
echo json_encode(['ran' => $ran]);`)), &out))
	return out.Ran
}

// TestLiveUniqueJobSharesLocks: a key PHP's UniqueJob holds makes Go's
// UniqueJob complete its job without running it, and a key Go's holds
// makes PHP's skip its closure: both insert the same row of
// queuety_locks, with no expiry.
func TestLiveUniqueJobSharesLocks(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)

	holder := php.holdUnique("sync_inventory")
	row := lockRow(t, c, "sync_inventory")
	require.NotNil(t, row, "PHP's lock row, as Go reads it")
	assert.Len(t, row.Owner, 32)
	assert.True(t, row.ExpiresAt.IsZero(), "PHP's UniqueJob row has no expiry")

	var runs atomic.Int32
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.UseFor("go_sync", middleware.UniqueJob("sync_inventory"))
	w.HandleJob("go_sync", func(context.Context, queuety.Payload) error { runs.Add(1); return nil })
	id, err := c.Dispatch(ctx, "go_sync", nil)
	require.NoError(t, err)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Zero(t, runs.Load(), "Go handler runs while PHP holds the key")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "skipped: completed without running, as in PHP")

	holder.release(t)
	assert.Nil(t, lockRow(t, c, "sync_inventory"), "PHP deleted its lock")
	_, err = c.Dispatch(ctx, "go_sync", nil)
	require.NoError(t, err)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, 1, runs.Load(), "Go handler runs once PHP released the key")

	// Go holds the key: PHP's UniqueJob skips its closure.
	entered, proceed := make(chan struct{}), make(chan struct{})
	w.UseFor("go_hold", middleware.UniqueJob("sync_inventory"))
	w.HandleJob("go_hold", func(context.Context, queuety.Payload) error { close(entered); <-proceed; return nil })
	_, err = c.Dispatch(ctx, "go_hold", nil)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := w.RunOnce(ctx, time.Minute)
		assert.NoError(t, err)
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		close(proceed)
		t.Fatal("Go handler did not start")
	}
	row = lockRow(t, c, "sync_inventory")
	require.NotNil(t, row)
	assert.True(t, row.ExpiresAt.IsZero(), "Go's UniqueJob row has no expiry either")
	assert.False(t, php.phpUniqueRan("sync_inventory"), "PHP closure runs while Go holds the key")
	close(proceed)
	<-done
	assert.Nil(t, lockRow(t, c, "sync_inventory"), "Go deleted its lock")
	assert.True(t, php.phpUniqueRan("sync_inventory"), "PHP closure runs once Go released the key")
}

// TestLiveRateLimitedSharedWithPHP: the executions Go's RateLimited
// admitted (their 'completed' log rows) fill PHP's RateLimited window, so
// PHP throws its RateLimitExceededException with the message Go's
// release carries; and the jobs Queuety PHP's worker ran of a handler
// (their 'started' log rows) count against Go's RateLimited.
func TestLiveRateLimitedSharedWithPHP(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	var runs atomic.Int32
	w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(1), worker.Queues("rl"), worker.WithLogger(slog.New(slog.DiscardHandler)))
	for _, h := range []string{"RateFromGo", "RateFromPHP"} {
		w.UseFor(h, middleware.RateLimited(3, time.Minute))
		w.HandleJob(h, func(context.Context, queuety.Payload) error { runs.Add(1); return nil })
	}

	// Go fills the window; PHP's RateLimited, keyed by the job's class,
	// finds it full.
	for range 3 {
		_, err := c.Dispatch(ctx, "RateFromGo", nil, queuety.OnQueue("rl"))
		require.NoError(t, err)
	}
	_, err := w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 3, runs.Load())
	var phpOut struct {
		Ran   bool   `json:"ran"`
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
final class RateFromGo {}
$ran = false; $error = '';
try {
	( new \Queuety\Middleware\RateLimited( 3, 60 ) )->handle( new RateFromGo(), function () use ( &$ran ): void { $ran = true; } );
} catch ( \Queuety\Exceptions\RateLimitExceededException $e ) {
	$error = $e->getMessage();
}
echo json_encode( array( 'ran' => $ran, 'error' => $error ) );`)), &phpOut))
	assert.False(t, phpOut.Ran, "PHP ran with Go's window full")
	assert.Equal(t, middleware.RateLimitMessage("RateFromGo", 3, time.Minute), phpOut.Error, "PHP's message is Go's release reason")

	// PHP's worker runs two jobs of RateFromPHP; Go's RateLimited(3, 1
	// min) then admits one more.
	for range 2 {
		_, err := c.Dispatch(ctx, "RateFromPHP", nil, queuety.OnQueue("rlphp"))
		require.NoError(t, err)
	}
	var flushed struct {
		Processed int `json:"processed"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
final class RateFromPHPHandler implements \Queuety\Handler {
	public function handle( array $payload ): void {}
	public function config(): array { return array(); }
}
\Queuety\Queuety::register( 'RateFromPHP', RateFromPHPHandler::class );
echo json_encode( array( 'processed' => \Queuety\Queuety::flush_queue( array( 'rlphp' ) ) ) );`)), &flushed))
	require.Equal(t, 2, flushed.Processed, "PHP ran its two jobs")
	runs.Store(0)
	for range 3 {
		_, err := c.Dispatch(ctx, "RateFromPHP", nil, queuety.OnQueue("rl"))
		require.NoError(t, err)
	}
	st, err := w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, 1, runs.Load(), "Go runs what PHP's two executions left of the window")
	assert.EqualValues(t, 2, st.HandedBack, "the others are handed back")
}
