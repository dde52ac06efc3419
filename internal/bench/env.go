package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/postgres"
)

// EnvFor returns the Env for a DSN: a fresh table prefix per run on MySQL,
// a fresh file per run on SQLite, a fresh schema per run on PostgreSQL.
func EnvFor(dsn string) (Env, error) {
	switch driver.SchemeOf(dsn) {
	case "mysql":
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, err
		}
		return &MySQLEnv{base: cfg}, nil
	case "sqlite":
		return &SQLiteEnv{}, nil
	case "postgres", "postgresql":
		if _, err := postgres.ParseDSN(dsn); err != nil {
			return nil, err
		}
		return &PostgresEnv{base: dsn}, nil
	}
	return nil, fmt.Errorf("bench: unsupported store %q", driver.SchemeOf(dsn))
}

// MySQLEnv runs each benchmark on a fresh table prefix of one database.
type MySQLEnv struct{ base *mysql.Config }

// Fresh implements Env.
func (e *MySQLEnv) Fresh(ctx context.Context) (string, func(), error) {
	prefix := "qb" + RandomSuffix() + "_"
	dc := e.base.Driver.Clone()
	dsn := dc.FormatDSN()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	dsn += sep + "prefix=" + prefix
	if e.base.Lean {
		dsn += "&schema=lean"
	}
	if !dc.InterpolateParams {
		// FormatDSN leaves a false out, and the store's default is true.
		dsn += "&interpolateParams=false"
	}
	cleanup := func() {
		// The run's ctx may be over (a timed or interrupted run): the
		// tables are dropped all the same.
		ctx := context.WithoutCancel(ctx)
		db, err := e.admin()
		if err != nil {
			return
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?",
			strings.ReplaceAll(prefix, "_", `\_`)+"%")
		if err != nil {
			return
		}
		var names []string
		for rows.Next() {
			var n string
			if rows.Scan(&n) == nil {
				names = append(names, "`"+n+"`")
			}
		}
		rows.Close()
		if len(names) > 0 {
			_, _ = db.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", "))
		}
	}
	return dsn, cleanup, nil
}

func (e *MySQLEnv) admin() (*sql.DB, error) {
	conn, err := gomysql.NewConnector(e.base.Driver.Clone())
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// RawCeiling seeds jobs through the engine's client c on the store dsn
// names (untimed), then drains them with hand-written SQL on conns
// connections: one transaction per batch of
// 100 (SELECT ... FOR UPDATE SKIP LOCKED in the claim index's order, then
// UPDATE ... IN), and one batched completion UPDATE. No logs, no fencing,
// no handlers: the most any queue on these tables could do on this server.
func (e *MySQLEnv) RawCeiling(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error) {
	return rawCeiling(ctx, c, dsn, jobs, conns, false, false)
}

// RawCeilingLogs is RawCeiling with the log rows Queuety's contract asks
// of every attempt: each batch's completion UPDATE and its 'started' and
// 'completed' rows (job id, handler, queue, event, attempt, duration,
// time; the columns a Go worker fills for a plain job) are one
// transaction. It is the most a queue that PHP can read could do on these
// tables, so the drains' share of it tells the engine's own overhead
// apart from the log rows' cost.
func (e *MySQLEnv) RawCeilingLogs(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error) {
	return rawCeiling(ctx, c, dsn, jobs, conns, true, false)
}

// RawCeilingTwoStep is RawCeiling with the engine's two-step claim on
// MySQL: the batch's candidate ids come from a plain read of the claim
// index, and the transaction then locks them by primary key (SKIP
// LOCKED), scanning with locks only when other connections hold them
// all. A locking scan of the claim index checks, through the clustered
// index, every entry of a recently claimed job that purge has yet to
// remove; the plain read passes them by. It is the raw ceiling with the
// best claim this engine knows.
func (e *MySQLEnv) RawCeilingTwoStep(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error) {
	return rawCeiling(ctx, c, dsn, jobs, conns, false, true)
}

// claimRaw locks and reads a raw ceiling batch in tx: sel, the locking
// scan, or the two-step claim. It returns the ids and the attempt each
// job's claim starts, as SQL text.
func claimRaw(ctx context.Context, tx *sql.Tx, table, sel string, twoStep bool) (ids, attempts []string, err error) {
	now := time.Now().UTC()
	read := func(q string, args ...any) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, attempt int64
			var h, p string
			if err := rows.Scan(&id, &h, &p, &attempt); err != nil {
				return err
			}
			ids = append(ids, fmt.Sprint(id))
			attempts = append(attempts, fmt.Sprint(attempt+1))
		}
		return rows.Err()
	}
	if twoStep {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM "+table+" FORCE INDEX (idx_go_claim) WHERE queue = 'default' AND status = 'pending' "+
			"AND available_at <= ? ORDER BY priority DESC, available_at, id LIMIT 100", now)
		if err != nil {
			return nil, nil, err
		}
		var cands []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, nil, err
			}
			cands = append(cands, fmt.Sprint(id))
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(cands) == 0 {
			return nil, nil, err
		}
		if err := read("SELECT id, handler, payload, attempts FROM " + table + " FORCE INDEX (PRIMARY) WHERE id IN (" + strings.Join(cands, ",") +
			") AND status = 'pending' ORDER BY priority DESC, available_at, id FOR UPDATE SKIP LOCKED"); err != nil || len(ids) > 0 {
			return ids, attempts, err
		}
	}
	return ids, attempts, read(sel, now)
}

func rawCeiling(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int, logs, twoStep bool) (float64, error) {
	if err := dispatchAll(ctx, c, noopRequests(jobs)); err != nil {
		return 0, err
	}
	table := clientseam.StoreOf(c).Info().Prefix + "queuety_jobs"
	logTable := clientseam.StoreOf(c).Info().Prefix + "queuety_logs"
	db, err := rawConns(dsn, conns)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	sel := "SELECT id, handler, payload, attempts FROM " + table + " FORCE INDEX (idx_go_claim) WHERE queue = 'default' AND status = 'pending' " +
		"AND available_at <= ? ORDER BY priority DESC, available_at, id LIMIT 100 FOR UPDATE SKIP LOCKED"
	return drainRaw(ctx, db, jobs, conns, rawDrain{
		claim: func(ctx context.Context, tx *sql.Tx) ([]string, []string, error) {
			return claimRaw(ctx, tx, table, sel, twoStep)
		},
		mark: "UPDATE " + table + " FORCE INDEX (PRIMARY) SET status = 'processing', reserved_at = ?, attempts = attempts + 1 WHERE id IN (%s) AND status = 'pending'",
		complete: func(ctx context.Context, db *sql.DB, in string, ids, attempts []string) error {
			return completeRaw(ctx, db, table, logTable, in, ids, attempts, logs)
		},
	})
}

// rawConns opens conns connections for a raw ceiling on the store dsn
// names, with its time zone and parsed times.
func rawConns(dsn string, conns int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	dc := cfg.Driver.Clone()
	dc.InterpolateParams = true
	dc.ParseTime = true
	dc.Params = map[string]string{"time_zone": "'+00:00'"}
	conn, err := gomysql.NewConnector(dc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// rawDrain is what a raw ceiling runs per batch: claim locks and reads up
// to 100 rows in the claim transaction, mark (an UPDATE whose %s is the
// ids and whose one argument is the time) moves them to processing in
// the same transaction, and complete marks them completed afterwards.
type rawDrain struct {
	claim    func(ctx context.Context, tx *sql.Tx) (ids, attempts []string, err error)
	mark     string
	complete func(ctx context.Context, db *sql.DB, in string, ids, attempts []string) error
}

// drainRaw times conns connections draining jobs rows with d, each
// batch claimed in one transaction and completed by one statement or
// transaction; a deadlock or lock-wait timeout runs the step again.
func drainRaw(ctx context.Context, db *sql.DB, jobs, conns int, d rawDrain) (float64, error) {
	meter := meterFrom(ctx)
	meter.start()
	start := time.Now()
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				ids, attempts, err := d.claim(ctx, tx)
				if err == nil && len(ids) == 0 {
					tx.Rollback()
					return
				}
				in := strings.Join(ids, ",")
				if err == nil {
					_, err = tx.ExecContext(ctx, fmt.Sprintf(d.mark, in), time.Now().UTC())
				}
				if err == nil {
					err = tx.Commit()
				}
				if err != nil {
					tx.Rollback()
					if transient(err) { // as any queue does: the batch is claimed again
						continue
					}
					errs <- err
					return
				}
				for {
					err := d.complete(ctx, db, in, ids, attempts)
					if err == nil {
						break
					}
					if !transient(err) {
						errs <- err
						return
					}
				}
				done.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	meter.stop(float64(jobs))
	close(errs)
	for err := range errs {
		return 0, err
	}
	if n := done.Load(); n != int64(jobs) {
		return 0, fmt.Errorf("raw ceiling drained %d of %d jobs", n, jobs)
	}
	return float64(jobs) / elapsed.Seconds(), nil
}

// transient reports a deadlock or lock-wait timeout, which a transaction
// survives by running again.
func transient(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// completeRaw is the raw ceiling's completion of a batch: one UPDATE, or,
// with logs, the UPDATE and the batch's log rows in one transaction.
func completeRaw(ctx context.Context, db *sql.DB, table, logTable, in string, ids, attempts []string, logs bool) error {
	now := time.Now().UTC()
	upd := "UPDATE " + table + " FORCE INDEX (PRIMARY) SET status = 'completed', completed_at = ? WHERE id IN (" + in + ") AND status = 'processing'"
	if !logs {
		_, err := db.ExecContext(ctx, upd, now)
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, upd, now); err != nil {
		return err
	}
	at := "'" + now.Format(time.DateTime) + "'"
	var b strings.Builder
	b.WriteString("INSERT INTO " + logTable + " (job_id, handler, queue, event, attempt, duration_ms, created_at) VALUES ")
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, 'noop', 'default', 'started', %s, NULL, %s), (%s, 'noop', 'default', 'completed', %s, 0, %s)",
			id, attempts[i], at, id, attempts[i], at)
	}
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return err
	}
	return tx.Commit()
}

// SQLiteEnv runs each benchmark on a fresh SQLite file.
type SQLiteEnv struct{}

// Fresh implements Env.
func (SQLiteEnv) Fresh(context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "queuety-bench-")
	if err != nil {
		return "", nil, err
	}
	return "sqlite://" + filepath.Join(dir, "bench.db"), func() { os.RemoveAll(dir) }, nil
}

// ServerPID returns the pid of the database server when it runs on this
// machine (see localServerPID); 0 otherwise.
func (e *MySQLEnv) ServerPID(ctx context.Context) int {
	db, err := e.admin()
	if err != nil {
		return 0
	}
	defer db.Close()
	return localServerPID(ctx, db)
}

// ServerCPU implements serverCPUEnv: the CPU time of the server process
// when it runs on this machine (see localServerPID).
func (e *MySQLEnv) ServerCPU(ctx context.Context) serverCPU {
	pid := e.ServerPID(ctx)
	if pid == 0 {
		return nil
	}
	return func() cpuTimes { return cpuTimes{pid: processCPU(pid)} }
}
