package fleetrate_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// childEnv, set to a JSON childConfig, makes the test binary run one
// worker process instead of the tests.
const childEnv = "QUEUETY_FLEETRATE_CHILD"

type childConfig struct {
	DSN     string        `json:"dsn"`
	Handler string        `json:"handler"`
	Max     int           `json:"max"`
	Window  time.Duration `json:"window"`
	Timeout time.Duration `json:"timeout"` // a child never outlives this
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		os.Exit(child(raw))
	}
	os.Exit(m.Run())
}

// child runs a worker with the rate limit until SIGTERM. It prints
// "started" to stdout when its handler first runs.
func child(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c, err := queuety.Open(ctx, cfg.DSN, queuety.SkipMigrate(), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer c.Close()
	w := worker.New(c, worker.RateLimit(cfg.Handler, cfg.Max, cfg.Window), worker.Concurrency(cfg.Max),
		worker.NoMaintenance(), worker.ShutdownTimeout(5*time.Second), worker.WithLogger(slog.New(slog.DiscardHandler)))
	first := make(chan struct{}, 1)
	w.HandleJob(cfg.Handler, func(context.Context, queuety.Payload) error {
		select {
		case first <- struct{}{}:
			fmt.Println("started")
		default:
		}
		return nil
	})
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// Four worker processes share one handler limited to 10 starts per second,
// with a backlog of 420 jobs. Over the 30 s after the first start they
// start 300 jobs (within 5%), and no 1 s window of the starts the claims
// recorded (microseconds) holds more than 10. Every job claimed runs once:
// none is lost, retried or buried.
func TestFourProcessesShareOneRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 30 s")
	}
	if runtime.GOOS == "windows" {
		t.Skip("uses SIGTERM")
	}
	const (
		handler = "fleet.tick"
		limit   = 10
		period  = 30 * time.Second
		procs   = 4
		backlog = 420
	)
	dsn, prefix := migrated.DSN(t)
	ctx := context.Background()
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	reqs := make([]queuety.JobRequest, backlog)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: handler, Payload: queuety.State{"i": i}}
	}
	_, err = c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	// The claims prune starts that left the window: keep a copy of each.
	db := testdb.Admin(t)
	archive := prefix + "fleet_starts"
	for _, q := range []string{
		"CREATE TABLE " + archive + " (started_at DATETIME(6) NOT NULL, job_id BIGINT UNSIGNED NOT NULL)",
		"CREATE TRIGGER " + prefix + "fleet_copy AFTER INSERT ON " + prefix + "queuety_go_rate_starts FOR EACH ROW " +
			"INSERT INTO " + archive + " (started_at, job_id) VALUES (NEW.started_at, NEW.job_id)",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}

	raw, err := json.Marshal(childConfig{DSN: dsn, Handler: handler, Max: limit, Window: time.Second, Timeout: 2 * time.Minute})
	require.NoError(t, err)
	started := make(chan struct{}, procs)
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() == "started" {
					started <- struct{}{}
				}
			}
			_, _ = io.Copy(io.Discard, out)
		}()
	}
	stopAll := func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, cmd := range cmds {
			assert.NoError(t, cmd.Wait(), "worker process exit")
		}
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		stopAll()
		t.Fatal("no worker process ran a job within a minute")
	}
	time.Sleep(period + time.Second) // the measured period itself
	stopAll()

	starts := readTimes(t, db, "SELECT started_at FROM "+archive+" ORDER BY started_at")
	require.NotEmpty(t, starts, "recorded starts")
	t0 := starts[0]
	inPeriod, peak := 0, 0
	for i, s := range starts {
		if s.Before(t0.Add(period)) {
			inPeriod++
		}
		n := sort.Search(len(starts), func(k int) bool { return !starts[k].Before(s.Add(time.Second)) }) - i
		peak = max(peak, n)
	}
	t.Logf("%d starts in the %s after the first (%.2f/s), at most %d in any 1 s window; %d recorded in all",
		inPeriod, period, float64(inPeriod)/period.Seconds(), peak, len(starts))
	var pace []string // how far each start lags the slot it waited for
	var lags time.Duration
	n := 0
	for i := limit; i < len(starts) && starts[i].Before(t0.Add(period)); i++ {
		lag := starts[i].Sub(starts[i-limit]) - time.Second
		lags, n = lags+lag, n+1
		if lag > 50*time.Millisecond {
			pace = append(pace, fmt.Sprintf("%d:+%s", i, lag.Round(time.Millisecond)))
		}
	}
	if n > 0 {
		t.Logf("a start follows the start whose slot it took by the window plus %s on average; more than 50 ms late: %v",
			(lags / time.Duration(n)).Round(100*time.Microsecond), pace)
	}
	assert.LessOrEqual(t, peak, limit, "starts in any 1 s window")
	want := limit * int(period/time.Second)
	assert.LessOrEqual(t, inPeriod, want, "starts in %s", period)
	assert.GreaterOrEqual(t, inPeriod, want*95/100, "starts in %s (5%% below the limit)", period)

	// The log rows agree, and every job ran once.
	var logged, completed, other, retried int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+prefix+"queuety_logs WHERE handler = ? AND event = 'started'", handler).Scan(&logged))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+prefix+"queuety_jobs WHERE handler = ? AND status = 'completed'", handler).Scan(&completed))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+prefix+"queuety_jobs WHERE handler = ? AND status NOT IN ('completed', 'pending')", handler).Scan(&other))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+prefix+"queuety_jobs WHERE handler = ? AND (attempts > 1 OR (status = 'pending' AND attempts > 0))", handler).Scan(&retried))
	assert.Equal(t, completed, logged, "started log rows, one per completed job")
	assert.LessOrEqual(t, completed, len(starts), "completed jobs, each with a recorded start")
	assert.LessOrEqual(t, len(starts)-completed, limit, "starts recorded for jobs handed back at shutdown")
	assert.Zero(t, other, "jobs left processing, failed or buried")
	assert.Zero(t, retried, "jobs that used more than one attempt")
	logSeconds := readTimes(t, db, "SELECT created_at FROM "+prefix+"queuety_logs WHERE handler = ? AND event = 'started' ORDER BY id", handler)
	perSecond := map[int64]int{}
	for _, s := range logSeconds {
		perSecond[s.Unix()]++
	}
	var line []string
	for sec := t0.Unix(); sec < t0.Add(period).Unix(); sec++ {
		line = append(line, fmt.Sprint(perSecond[sec]))
	}
	t.Logf("started log rows per second: %s", strings.Join(line, " "))
}

func readTimes(t *testing.T, db *sql.DB, q string, args ...any) []time.Time {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		v, err := time.Parse("2006-01-02 15:04:05.999999", s)
		require.NoError(t, err, "time %q", s)
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	return out
}
