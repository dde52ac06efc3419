package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// longPoll is the idle workers' poll interval in the wake-up tests: a job
// they start well within it was started by a wake-up, not a poll.
const longPoll = 30 * time.Second

// startedWithin is how soon a woken worker must start a job: well under
// longPoll, and generous for a loaded machine.
const startedWithin = 10 * time.Second

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// wakeClients opens a worker side and a dispatch side on the same tables
// with different DSNs, so they share no in-process wake-up: only the
// store's wake-up reaches the worker side's workers. The worker side runs
// a worker polling every longPoll; the returned channel receives the
// payload of each job it runs.
func wakeClients(t *testing.T, ctx context.Context, dsn, dispatchDSN string, log *slog.Logger) (dispatch *queuety.Client, ran <-chan string) {
	t.Helper()
	if log == nil {
		log = quietLog()
	}
	workerSide, err := queuety.Open(ctx, dsn+"&timeout=11s", queuety.WithLogger(log))
	require.NoError(t, err)
	t.Cleanup(func() { workerSide.Close() })
	dispatchSide, err := queuety.Open(ctx, dispatchDSN+"&timeout=12s", queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { dispatchSide.Close() })

	runs := make(chan string, 16)
	w := worker.New(workerSide, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
	w.HandleJob("ping", func(_ context.Context, p queuety.Payload) error {
		runs <- fmt.Sprint(p["n"])
		return nil
	})
	runWorker(t, ctx, w)
	return dispatchSide, runs
}

// listeners returns the ids of the sessions sleeping as wake-up listeners
// on the jobs table of prefix.
func listeners(t *testing.T, prefix string) map[int64]bool {
	t.Helper()
	rows, err := testdb.Admin(t).Query("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ?",
		"SELECT SLEEP(%) AS queuety_go_wake, '%."+prefix+"queuety\\_jobs' AS jobs\\_table%")
	require.NoError(t, err)
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids[id] = true
	}
	require.NoError(t, rows.Err())
	return ids
}

// waitNewListener waits until a listener sleeps that is not in old, and
// returns its id.
func waitNewListener(t *testing.T, prefix string, old map[int64]bool) int64 {
	t.Helper()
	var id int64
	require.Eventually(t, func() bool {
		for l := range listeners(t, prefix) {
			if !old[l] {
				id = l
				return true
			}
		}
		return false
	}, startedWithin, 5*time.Millisecond, "no wake-up listener started sleeping")
	return id
}

func waitRun(t *testing.T, ran <-chan string, want string, what string) {
	t.Helper()
	select {
	case got := <-ran:
		require.Equal(t, want, got)
	case <-time.After(startedWithin):
		t.Fatalf("%s: the job did not start within %s (the workers poll every %s)", what, startedWithin, longPoll)
	}
}

// TestWakeReachesAnotherProcess: a job dispatched by one client starts at
// once on an idle worker of another, whose poll interval is 30 s. (Only
// the first job is a proof: after running one, a worker polls again soon.)
func TestWakeReachesAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	before := map[int64]bool{}
	dispatch, ran := wakeClients(t, ctx, dsn, dsn, nil)
	waitNewListener(t, prefix, before)
	_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": "first"})
	require.NoError(t, err)
	waitRun(t, ran, "first", "dispatched to an idle worker of another client")
}

// killListener kills the connection of the listener that started after
// before, and waits until it is gone.
func killListener(t *testing.T, prefix string, before map[int64]bool) {
	t.Helper()
	id := waitNewListener(t, prefix, before)
	_, err := testdb.Admin(t).Exec(fmt.Sprintf("KILL CONNECTION %d", id))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !listeners(t, prefix)[id] }, startedWithin, 5*time.Millisecond)
	before[id] = true
}

// TestWakeListenerReconnects: when the listener's connection is killed,
// the listener reconnects and wakes the idle worker again.
func TestWakeListenerReconnects(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	before := map[int64]bool{}
	var logged syncbuf.Buffer
	dispatch, ran := wakeClients(t, ctx, dsn, dsn, slog.New(slog.NewTextHandler(&logged, nil)))
	killListener(t, prefix, before)
	waitNewListener(t, prefix, before)
	_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": "after"})
	require.NoError(t, err)
	waitRun(t, ran, "after", "dispatched after the listener reconnected")

	// The loss is logged on the client's logger, once: a second loss is
	// not logged again.
	killListener(t, prefix, before)
	waitNewListener(t, prefix, before)
	require.Equal(t, 1, strings.Count(logged.String(), "level=WARN msg=\"queuety: mysql wake-up listener lost its connection"), logged.String())
}

// TestWakeAfterReconnectClaims: a job dispatched while the listener is
// down reaches no listener; the listener, back, wakes the worker once,
// which claims it.
func TestWakeAfterReconnectClaims(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	before := map[int64]bool{}
	dispatch, ran := wakeClients(t, ctx, dsn, dsn, nil)
	killListener(t, prefix, before)
	_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": "meanwhile"})
	require.NoError(t, err)
	waitRun(t, ran, "meanwhile", "dispatched while the listener was down")
}

// plainUser creates a database user with row privileges on dsn's
// database only (no PROCESS, SUPER or CONNECTION_ADMIN), dropped after
// the test, and returns dsn's configuration with that user.
func plainUser(t *testing.T, dsn string) *gomysql.Config {
	t.Helper()
	dc, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	admin := testdb.Admin(t)
	user := fmt.Sprintf("qg_wake_%d", time.Now().UnixNano()%1e9)
	_, err = admin.Exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec("DROP USER '" + user + "'@'%'") })
	_, err = admin.Exec("GRANT SELECT, INSERT, UPDATE, DELETE ON `" + strings.ReplaceAll(dc.DBName, "`", "``") + "`.* TO '" + user + "'@'%'")
	require.NoError(t, err)
	other := dc.Clone()
	other.User, other.Passwd = user, "pw"
	return other
}

// TestWakeWithoutPrivilege: a user with row privileges only interrupts
// its own sessions' sleeps: a dispatch by one client of that user wakes
// the idle worker of another client of the same user.
func TestWakeWithoutPrivilege(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	plain := plainUser(t, dsn).FormatDSN()
	dispatch, ran := wakeClients(t, ctx, plain, plain, nil)
	waitNewListener(t, prefix, map[int64]bool{})
	_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": "plain"})
	require.NoError(t, err)
	waitRun(t, ran, "plain", "dispatched by a user without PROCESS or CONNECTION_ADMIN")
}

// TestWakeWithoutPrivilegeFallsBack: a dispatcher that cannot see the
// listener (another database user, no PROCESS privilege) still
// dispatches without error, and the worker runs the job when it polls.
func TestWakeWithoutPrivilegeFallsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := migrated.DSN(t)
	other := plainUser(t, dsn)

	// The worker polls every 200 ms here: only polling can start the job.
	workerSide, err := queuety.Open(ctx, dsn, queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	defer workerSide.Close()
	dispatchSide, err := queuety.Open(ctx, other.FormatDSN(), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	defer dispatchSide.Close()
	ran := make(chan struct{}, 1)
	w := worker.New(workerSide, worker.NoMaintenance(), worker.PollInterval(200*time.Millisecond), worker.WithLogger(quietLog()))
	w.HandleJob("ping", func(context.Context, queuety.Payload) error {
		ran <- struct{}{}
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()

	_, err = dispatchSide.Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	select {
	case <-ran:
	case <-time.After(startedWithin):
		t.Fatal("the job did not start by polling")
	}
	// The dispatching user sees none of the worker's sessions, so it finds
	// no listener to interrupt.
	var n int
	delete(other.Params, "prefix")
	db, err := sql.Open("mysql", other.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(%) AS queuety_go_wake,%'").Scan(&n))
	require.Zero(t, n)
}

// TestWakeOff: wake=false turns the wake-up off: the store neither
// listens nor interrupts anyone.
func TestWakeOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, _ := migrated.DSN(t)
	cfg, err := mysql.ParseDSN(dsn + "&wake=false")
	require.NoError(t, err)
	require.True(t, cfg.NoWake)
	s, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.NotifyJobs(ctx))
	// ListenJobs returns at once instead of listening until ctx ends.
	require.NoError(t, s.ListenJobs(ctx, func() { t.Error("woken with wake=false") }))
	require.NoError(t, ctx.Err())
}
