package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// phpHolder is a PHP process inside Queuety's WithoutOverlapping: it
// holds the lock until release is called.
type phpHolder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// holdLock starts PHP running WithoutOverlapping(key, 300) around a
// closure that prints "locked" and waits for a line on stdin.
func (p *livePHP) holdLock(key string) *phpHolder {
	p.t.Helper()
	code := "require '" + strings.ReplaceAll(p.lib, "'", `\'`) + "'; \\QueuetyGoInterop\\boot();\n" + `
$mw = new \Queuety\Middleware\WithoutOverlapping(` + phpString(key) + `, 300);
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

// release lets the PHP closure return and waits for the process to end.
func (h *phpHolder) release(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(h.stdin, "go\n")
	require.NoError(t, err)
	line, err := h.out.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "released\n", line)
	require.NoError(t, h.cmd.Wait())
}

// phpString quotes s as a PHP single-quoted string.
func phpString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// phpOverlapRan runs a closure under PHP's WithoutOverlapping(key) and
// reports whether it ran.
func (p *livePHP) phpOverlapRan(key string) bool {
	p.t.Helper()
	var out struct {
		Ran bool `json:"ran"`
	}
	require.NoError(p.t, json.Unmarshal([]byte(p.eval(`
$ran = false;
(new \Queuety\Middleware\WithoutOverlapping(`+phpString(key)+`))->handle(new \stdClass(), function () use (&$ran): void { $ran = true; });
echo json_encode(['ran' => $ran]);`)), &out))
	return out.Ran
}

// lockRow reads the locks-table row of key on c's store, or nil.
func lockRow(t *testing.T, c *queuety.Client, key string) *driver.Lock {
	t.Helper()
	var l *driver.Lock
	require.NoError(t, clientseam.StoreOf(c).InTx(context.Background(), func(tx driver.Tx) (err error) {
		l, err = tx.LockGet(context.Background(), key, driver.LockNone)
		if errors.Is(err, driver.ErrNotFound) {
			l, err = nil, nil
		}
		return err
	}))
	return l
}

// TestLiveWithoutOverlappingSharesLocks: a lock PHP's WithoutOverlapping
// holds makes Go's hand its job back, and a lock Go's holds makes PHP's
// skip its closure, because both use the same row of queuety_locks.
func TestLiveWithoutOverlappingSharesLocks(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	// The Go clock starts at the database's time, so both sides agree on
	// lock expiry; it moves only when the test moves it.
	clock := queuety.NewFakeClock(time.Now().UTC())
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	// PHP holds "shared-import"; a Go job under the same key is handed back.
	holder := php.holdLock("shared-import")
	row := lockRow(t, c, "shared-import")
	require.NotNil(t, row, "PHP's lock row, as Go reads it")
	assert.Len(t, row.Owner, 32, "owner: 32 hex characters")
	assert.Equal(t, row.AcquiredAt.Add(300*time.Second), row.ExpiresAt, "expires_at: acquired + release_after")

	var runs int
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.UseFor("go_import", middleware.WithoutOverlapping("shared-import", middleware.ReleaseDelay(5*time.Second)))
	w.HandleJob("go_import", func(context.Context, queuety.Payload) error { runs++; return nil })
	id, err := c.Dispatch(ctx, "go_import", nil)
	require.NoError(t, err)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Zero(t, runs, "Go handler runs while PHP holds the key")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, j.Status, "handed back")
	assert.Equal(t, 0, j.Attempts, "without using an attempt")

	holder.release(t)
	assert.Nil(t, lockRow(t, c, "shared-import"), "PHP deleted its lock")
	clock.Advance(6 * time.Second) // the release delay, rounded up to a whole second
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, runs, "Go handler runs once PHP released the key")

	// Go holds "shared-export"; PHP's WithoutOverlapping skips its closure.
	entered, proceed := make(chan struct{}), make(chan struct{})
	w.UseFor("go_export", middleware.WithoutOverlapping("shared-export"))
	w.HandleJob("go_export", func(context.Context, queuety.Payload) error {
		close(entered)
		<-proceed
		return nil
	})
	_, err = c.Dispatch(ctx, "go_export", nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := w.RunOnce(ctx, time.Minute)
		assert.NoError(t, err)
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		close(proceed)
		t.Fatal("Go handler did not start")
	}
	assert.False(t, php.phpOverlapRan("shared-export"), "PHP closure runs while Go holds the key")
	close(proceed)
	wg.Wait()
	assert.Nil(t, lockRow(t, c, "shared-export"), "Go deleted its lock")
	assert.True(t, php.phpOverlapRan("shared-export"), "PHP closure runs once Go released the key")
}

// TestLiveSyncDispatchWritesNoRows: Queuety's dispatch_sync and Go's
// DispatchSync both run the handler in-process with the payload as given
// and write no rows; an unknown handler fails with the same message.
func TestLiveSyncDispatchWritesNoRows(t *testing.T) {
	ctx := context.Background()
	_, php := newLive(t)
	php.run("truncate")
	before := php.run("dump")

	phpOut := php.eval(`
final class SyncRecorder implements \Queuety\Handler {
	public function handle( array $payload ): void { echo json_encode( $payload ), "\n"; }
	public function config(): array { return array(); }
}
\Queuety\Queuety::register( 'sync_record', SyncRecorder::class );
\Queuety\Queuety::dispatch_sync( 'sync_record', array( 'order' => 7, 'tags' => array( 'a', 'b' ), 'total' => 1.5 ) );
try {
	\Queuety\Queuety::dispatch_sync( 'QueuetyGoInterop\\NoSuchHandler', array() );
} catch ( \RuntimeException $e ) {
	echo $e->getMessage(), "\n";
}`)
	lines := strings.Split(strings.TrimSpace(phpOut), "\n")
	require.Len(t, lines, 2, "PHP output: %s", phpOut)
	afterPHP := php.run("dump")
	assert.JSONEq(t, before, afterPHP, "rows after PHP's dispatch_sync")

	reg := queuety.NewRegistry()
	var goPayload queuety.Payload
	reg.HandleJob("sync_record", func(_ context.Context, p queuety.Payload) error { goPayload = p; return nil })
	require.NoError(t, reg.DispatchSync(ctx, "sync_record", queuety.State{"order": 7, "tags": []string{"a", "b"}, "total": 1.5}))
	goJSON, err := json.Marshal(goPayload)
	require.NoError(t, err)
	assert.JSONEq(t, lines[0], string(goJSON), "payload the handler received, PHP and Go")
	err = reg.DispatchSync(ctx, `QueuetyGoInterop\NoSuchHandler`, nil)
	assert.EqualError(t, err, lines[1], "unknown handler, PHP's message and Go's")
	assert.JSONEq(t, before, php.run("dump"), "rows after Go's DispatchSync, as PHP dumps them")
}

// TestLiveThrottlesExceptionsSharesCounts: exceptions PHP's
// ThrottlesExceptions counted throttle Go's for the same handler name, and
// the reverse.
func TestLiveThrottlesExceptionsSharesCounts(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(time.Now().UTC())),
		queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	// PHP keys the count by the job's class: a global class named like the
	// Go handler.
	throwTwice := `
final class FlakyJob {}
$mw = new \Queuety\Middleware\ThrottlesExceptions( 2, 10 );
$out = array();
for ( $i = 0; $i < 3; $i++ ) {
	try {
		$mw->handle( new FlakyJob(), function (): void { throw new \RuntimeException( 'upstream down' ); } );
	} catch ( \RuntimeException $e ) {
		$out[] = $e->getMessage();
	}
}
echo json_encode( $out );`
	var phpErrs []string
	require.NoError(t, json.Unmarshal([]byte(php.eval(throwTwice)), &phpErrs))
	assert.Equal(t, []string{"upstream down", "upstream down", "Too many exceptions for FlakyJob (2 in 10 minutes). Throttled."}, phpErrs,
		"PHP: two exceptions, then throttled")
	row := lockRow(t, c, "throttle_exceptions:FlakyJob")
	require.NotNil(t, row, "PHP's counter row")
	assert.Equal(t, "2", row.Owner, "count")

	var calls int
	w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(1), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.UseFor("FlakyJob", middleware.ThrottlesExceptions(2, 10*time.Minute))
	w.HandleJob("FlakyJob", func(context.Context, queuety.Payload) error { calls++; return nil })
	id, err := c.Dispatch(ctx, "FlakyJob", nil, queuety.MaxAttempts(1))
	require.NoError(t, err)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Zero(t, calls, "Go handler runs while PHP's count is at the limit")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "job")
	assert.Equal(t, "Too many exceptions for FlakyJob (2 in 10 minutes). Throttled.", j.ErrorMessage, "Go's message is PHP's")

	// Go counts into the row PHP reads: clear it, fail twice in Go, and PHP
	// is throttled.
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		_, err := tx.LockDelete(ctx, "throttle_exceptions:FlakyJob", "2")
		return err
	}))
	w2 := worker.New(c, worker.NoMaintenance(), worker.Concurrency(1), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w2.UseFor("FlakyJob", middleware.ThrottlesExceptions(2, 10*time.Minute))
	w2.HandleJob("FlakyJob", func(context.Context, queuety.Payload) error { return errors.New("go side down") })
	for range 2 {
		_, err := c.Dispatch(ctx, "FlakyJob", nil, queuety.MaxAttempts(1))
		require.NoError(t, err)
	}
	_, err = w2.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "2", lockRow(t, c, "throttle_exceptions:FlakyJob").Owner, "Go's count")
	require.NoError(t, json.Unmarshal([]byte(php.eval(throwTwice)), &phpErrs))
	assert.Equal(t, "Too many exceptions for FlakyJob (2 in 10 minutes). Throttled.", phpErrs[0], "PHP throttled by Go's count")
}
