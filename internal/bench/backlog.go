package bench

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// backlogTemplateQueue holds the job the backlog is cloned from; no
// worker claims it.
const backlogTemplateQueue = "bench-template"

// backlogProbe is backlog-<n>: n pending no-op jobs are loaded once (by
// cloning one job with multi-row INSERT ... SELECT, not by dispatching),
// then, cfg.Runs times, one worker as drain-1w runs it drains
// min(p.BacklogDrain, n) of them and the drained jobs are put back, so
// every run starts at n pending. It reports the median time of the
// worker's claim transactions that returned jobs (backlog-<n>-claim, ms)
// and the drain rate (backlog-<n>-drain, jobs/s), with the load time.
func backlogProbe(n int, p Probes, cfg Config) probe {
	drain := min(p.BacklogDrain, n)
	name := fmt.Sprintf("backlog-%d", n)
	extra := map[string]float64{"backlog": float64(n), "drained": float64(drain), "concurrency": float64(cfg.Concurrency)}
	return probe{
		name:    name,
		results: []probeResult{{name + "-claim", "ms", extra}, {name + "-drain", "jobs/s", extra}},
		once:    true,
		run: func(ctx context.Context, env Env, rep *Report) (*probeOut, error) {
			out := &probeOut{values: map[string][]float64{}, extra: map[string]float64{}}
			_, err := runOnce(ctx, env, func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				start := time.Now()
				refill, err := loadBacklog(ctx, c, n)
				if err != nil {
					return 0, err
				}
				out.extra["load_s"] = time.Since(start).Seconds()
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "%-9s %-28s loaded %d pending jobs in %.1f s\n", "once", name, n, out.extra["load_s"])
				}
				for range cfg.Runs {
					claim, rate, drained, err := drainBacklog(ctx, dsn, drain, cfg.Concurrency)
					if err != nil {
						return 0, err
					}
					out.values[name+"-claim"] = append(out.values[name+"-claim"], claim)
					out.values[name+"-drain"] = append(out.values[name+"-drain"], rate)
					if err := refill(ctx, drained); err != nil {
						return 0, err
					}
				}
				return 0, nil
			}, rep)
			return out, err
		},
	}
}

// loadBacklog adds n pending no-op jobs to c's store and returns a
// function that adds more.
func loadBacklog(ctx context.Context, c *queuety.Client, n int) (func(context.Context, int) error, error) {
	ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "noop", Payload: queuety.State{"i": 0},
		Options: []queuety.JobOption{queuety.OnQueue(backlogTemplateQueue)}}})
	if err != nil {
		return nil, err
	}
	db, err := rawDB(c)
	if err != nil {
		return nil, err
	}
	table := clientseam.StoreOf(c).Info().Prefix + "queuety_jobs"
	add := func(ctx context.Context, k int) error {
		return cloneRows(ctx, db, table, ids[0], k, map[string]string{"queue": "'" + queuetytype.DefaultQueue + "'"})
	}
	return add, add(ctx, n)
}

// drainBacklog runs one worker (cfg as drain-1w: concurrency, 10 ms poll,
// no maintenance) until it has run n jobs, and returns the median time of
// its claims that returned jobs (ms), the rate (jobs/s) and how many jobs
// it completed in all (a few more than n can finish while it stops).
func drainBacklog(ctx context.Context, dsn string, n, concurrency int) (claimMS, rate float64, completed int, err error) {
	timer := &claimTimer{}
	c, err := open(ctx, dsn, queuety.SkipMigrate(), queuety.WithObserver(timer))
	if err != nil {
		return 0, 0, 0, err
	}
	defer c.Close()
	count := newCountdown(n)
	w := worker.New(c, worker.Concurrency(concurrency), worker.NoMaintenance(),
		worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleJob("noop", count.handle)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	start := time.Now()
	go func() { ran <- w.Run(runCtx) }()
	werr := waitFor(ctx, count.done, drainTimeout, fmt.Sprintf("a drain of %d jobs", n))
	elapsed := time.Since(start)
	stop()
	if err := <-ran; err != nil {
		return 0, 0, 0, err
	}
	if werr != nil {
		return 0, 0, 0, werr
	}
	return timer.median(), float64(n) / elapsed.Seconds(), int(w.Stats().Succeeded), nil
}

// claimTimer is an observer that keeps the duration of every claim that
// returned jobs.
type claimTimer struct {
	observe.Nop
	mu   sync.Mutex
	durs []float64 // ms
}

// Claimed implements observe.Observer.
func (t *claimTimer) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if c.Err == nil && len(c.Jobs) > 0 {
		t.mu.Lock()
		t.durs = append(t.durs, ms(c.Duration))
		t.mu.Unlock()
	}
	return ctx
}

func (t *claimTimer) median() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return median(t.durs)
}

// rawDB returns the database handle of c's store (MySQL, PostgreSQL or
// SQLite).
func rawDB(c *queuety.Client) (*sql.DB, error) {
	s, ok := clientseam.StoreOf(c).(interface{ SQLDB() *sql.DB })
	if !ok {
		return nil, fmt.Errorf("store %s has no SQL database handle", clientseam.StoreOf(c).Info().Driver)
	}
	return s.SQLDB(), nil
}

// cloneChunk is the most rows one cloning statement inserts.
const cloneChunk = 100000

// digits is a derived table of the ten digits; cross joins of it number
// the copies cloneRows makes (portable to MySQL, MariaDB and SQLite,
// unlike sequence tables or deep recursive CTEs).
const digits = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
	"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"

// cloneRows inserts n copies of row id of table: every column but id, with
// the SQL literals in over in place of those columns' values. Each
// statement (INSERT ... SELECT from the row cross-joined with digit
// tables) inserts up to cloneChunk rows in its own transaction.
func cloneRows(ctx context.Context, db *sql.DB, table string, id int64, n int, over map[string]string) error {
	rows, err := db.QueryContext(ctx, "SELECT * FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return fmt.Errorf("columns of %s: %w", table, err)
	}
	cols, err := rows.Columns()
	rows.Close()
	if err != nil {
		return fmt.Errorf("columns of %s: %w", table, err)
	}
	sort.Strings(cols)
	var ins, sel []string
	for _, col := range cols {
		if col == "id" {
			continue
		}
		ins = append(ins, col) // plain names, as the stores' own SQL writes them
		if v, ok := over[col]; ok {
			sel = append(sel, v)
		} else {
			sel = append(sel, "t."+col)
		}
	}
	head := "INSERT INTO " + table + " (" + strings.Join(ins, ", ") + ") SELECT " + strings.Join(sel, ", ") + " FROM " + table + " t"
	for left := n; left > 0; {
		k := min(left, cloneChunk)
		var joins strings.Builder
		for i, p := 0, 1; p < k; i, p = i+1, p*10 {
			fmt.Fprintf(&joins, " CROSS JOIN %s d%d", digits, i)
		}
		q := head + joins.String() + " WHERE t.id = ? LIMIT " + strconv.Itoa(k)
		res, err := db.ExecContext(ctx, q, id)
		if err != nil {
			return fmt.Errorf("clone rows of %s: %w", table, err)
		}
		if got, err := res.RowsAffected(); err == nil && got != int64(k) {
			return fmt.Errorf("clone rows of %s: inserted %d rows, want %d (is row %d there?)", table, got, k, id)
		}
		left -= k
	}
	return nil
}
