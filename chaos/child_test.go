//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/postgres"
	"github.com/queuety/queuety-go/worker"
)

// The test binary doubles as the worker and sweeper programs: with
// envChild set (to a JSON childConfig), TestMain runs that program
// instead of the tests.
const envChild = "QUEUETY_CHAOS_CHILD"

// Handler names.
const (
	hNoop     = "chaos.noop"
	hStep1    = "chaos.step1"
	hStep2    = "chaos.step2"
	hStep3    = "chaos.step3"
	hNever    = "chaos.never" // registered nowhere: its steps wait for their deadline
	hDeadline = "chaos.deadline"
	hHang     = "chaos.hang"   // ignores its context
	hBranch   = "chaos.branch" // a for_each branch: one run per item
	hAfter    = "chaos.after"  // the step after the for_each step
	hThen     = "chaos.then"   // a batch's then callback that takes CallbackSleep
	hLate     = "chaos.late"   // a deadline callback that takes CallbackSleep
)

// childConfig is what a child process is told to do.
type childConfig struct {
	Mode    string `json:"mode"`     // "worker" or "sweeper"
	DSN     string `json:"dsn"`      // queuety DSN
	RunsDSN string `json:"runs_dsn"` // database/sql DSN of the database holding chaos_runs
	// RunsDriver is RunsDSN's database/sql driver: "mysql" or "pgx".
	RunsDriver string `json:"runs_driver"`

	// worker
	Queues       []string      `json:"queues,omitempty"`
	Concurrency  int           `json:"concurrency,omitempty"`
	StaleTimeout time.Duration `json:"stale_timeout,omitempty"` // queuety.WithStaleTimeout
	Lease        time.Duration `json:"lease,omitempty"`         // worker.LeaseInterval
	Poll         time.Duration `json:"poll,omitempty"`          // worker.PollInterval
	StaleSweep   time.Duration `json:"stale_sweep,omitempty"`   // Intervals.Stale
	Deadlines    time.Duration `json:"deadlines,omitempty"`     // Intervals.Deadlines; negative: off
	Shutdown     time.Duration `json:"shutdown,omitempty"`      // worker.ShutdownTimeout
	HardStop     time.Duration `json:"hard_stop,omitempty"`     // worker.HardStopTimeout
	JobSleep     time.Duration `json:"job_sleep,omitempty"`     // how long chaos.noop and the steps take
	HangFor      time.Duration `json:"hang_for,omitempty"`      // how long chaos.hang ignores its ctx
	// CallbackSleep is how long chaos.then and chaos.late take.
	CallbackSleep time.Duration `json:"callback_sleep,omitempty"`

	// sweeper
	Gate string `json:"gate,omitempty"` // sweepers begin when this file exists
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(envChild); raw != "" {
		var cfg childConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "chaos child: bad %s: %v\n", envChild, err)
			os.Exit(90)
		}
		switch cfg.Mode {
		case "worker":
			os.Exit(workerMain(cfg))
		case "sweeper":
			os.Exit(sweeperMain(cfg))
		}
		fmt.Fprintf(os.Stderr, "chaos child: unknown mode %q\n", cfg.Mode)
		os.Exit(90)
	}
	os.Exit(m.Run())
}

// openRetry opens a client, retrying for up to a minute: a replacement
// worker may start while the server is restarting.
func openRetry(ctx context.Context, dsn string, opts ...queuety.Option) (*queuety.Client, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := queuety.Open(ctx, dsn, opts...)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return q, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workerMain is a worker process: a queuety worker with the chaos
// handlers, until SIGTERM. Every handler run is recorded in chaos_runs.
// The exit code is 0 whenever Run returns; a panic exits 2.
func workerMain(cfg childConfig) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	// Zero settings keep the engine's defaults (QUEUETY_CHAOS_DEFAULTS=1).
	qopts := []queuety.Option{queuety.WithLogger(log)}
	if cfg.StaleTimeout > 0 {
		qopts = append(qopts, queuety.WithStaleTimeout(cfg.StaleTimeout))
	}
	q, err := openRetry(ctx, cfg.DSN, qopts...)
	if err != nil {
		log.Error("chaos worker: open", "err", err)
		return 1
	}
	defer q.Close()
	runs, err := sql.Open(cfg.RunsDriver, cfg.RunsDSN)
	if err != nil {
		log.Error("chaos worker: open runs", "err", err)
		return 1
	}
	runs.SetMaxOpenConns(cfg.Concurrency + 2)
	runs.SetMaxIdleConns(cfg.Concurrency + 2)
	rec := &recorder{db: runs, pid: os.Getpid(), insert: `INSERT INTO chaos_runs
			(job_id, attempt, attempt_id, workflow_id, step_index, handler, tag, pid, started_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`}
	if cfg.RunsDriver == "pgx" {
		rec.insert = `INSERT INTO chaos_runs
			(job_id, attempt, attempt_id, workflow_id, step_index, handler, tag, pid, started_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	}

	wopts := []worker.Option{
		worker.Queues(cfg.Queues...),
		worker.Concurrency(cfg.Concurrency),
		worker.WithLogger(log),
		worker.Maintenance(worker.Intervals{Stale: cfg.StaleSweep, Deadlines: cfg.Deadlines}),
	}
	if cfg.Lease > 0 {
		wopts = append(wopts, worker.LeaseInterval(cfg.Lease))
	}
	if cfg.Poll > 0 {
		wopts = append(wopts, worker.PollInterval(cfg.Poll))
	}
	if cfg.Shutdown > 0 {
		wopts = append(wopts, worker.ShutdownTimeout(cfg.Shutdown))
	}
	if cfg.HardStop > 0 {
		wopts = append(wopts, worker.HardStopTimeout(cfg.HardStop))
	}
	w := worker.New(q, wopts...)
	work := func(ctx context.Context, tag string) error {
		if err := rec.record(ctx, tag); err != nil {
			return err
		}
		if cfg.JobSleep > 0 {
			time.Sleep(cfg.JobSleep)
		}
		return nil
	}
	w.HandleJob(hNoop, func(ctx context.Context, _ queuety.State) error { return work(ctx, "") })
	for _, h := range []string{hStep1, hStep2, hStep3} {
		w.HandleStep(h, func(ctx context.Context, _ queuety.State) (queuety.State, error) { return nil, work(ctx, "") })
	}
	w.HandleForEach(hBranch, func(ctx context.Context, _ queuety.State, _ any, index int) (queuety.State, error) {
		return nil, work(ctx, itemTag(index))
	})
	w.HandleStep(hAfter, func(ctx context.Context, _ queuety.State) (queuety.State, error) { return nil, work(ctx, "") })
	w.HandleDeadline(hDeadline, func(ctx context.Context, public queuety.State) error {
		return rec.record(ctx, public.String("key"))
	})
	slowCallback := func(ctx context.Context, tag string) error {
		if err := rec.record(ctx, tag); err != nil {
			return err
		}
		time.Sleep(cfg.CallbackSleep)
		return nil
	}
	w.HandleBatchCallback(hThen, func(ctx context.Context, b *queuety.Batch) error {
		return slowCallback(ctx, thenTag(b.ID))
	})
	w.HandleDeadline(hLate, func(ctx context.Context, public queuety.State) error {
		return slowCallback(ctx, lateTag(public.String("key")))
	})
	w.HandleJob(hHang, func(ctx context.Context, _ queuety.State) error {
		if err := rec.record(ctx, "hang"); err != nil {
			return err
		}
		time.Sleep(cfg.HangFor) // a handler that ignores its ctx
		return nil
	})
	fmt.Println("ready")
	if err := w.Run(ctx); err != nil {
		log.Error("chaos worker: run returned", "err", err)
	}
	log.Info("chaos worker: exiting", "stats", fmt.Sprintf("%+v", w.Stats()))
	return 0
}

// recorder writes one chaos_runs row per attempt that reaches its
// handler, keyed by the attempt id. chaos_runs lives on a server no
// scenario crashes (see runChaos), so the insert is not retried: an error
// fails the handler and shows in the worker's log, and an attempt whose
// handler ran twice fails on the duplicate key instead of going unseen.
type recorder struct {
	db     *sql.DB
	pid    int
	insert string // the INSERT of a run
}

func (r *recorder) record(ctx context.Context, tag string) error {
	info, ok := queuety.JobInfoFrom(ctx)
	if !ok {
		return queuety.NonRetryable(fmt.Errorf("no job info in the handler's context"))
	}
	_, err := r.db.ExecContext(ctx, r.insert,
		info.JobID, info.Attempt, info.AttemptID, info.WorkflowID, info.StepIndex, info.Handler, tag, r.pid, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("record run of attempt %s: %w", info.AttemptID, err)
	}
	return nil
}

// sweeperMain is a sweeper process: it prints "ready", waits for the gate
// file, runs the deadline sweep until a pass finds nothing twice in a row,
// then prints how many workflows it expired.
func sweeperMain(cfg childConfig) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	q, err := openRetry(ctx, cfg.DSN, queuety.WithLogger(log), queuety.SkipMigrate())
	if err != nil {
		log.Error("chaos sweeper: open", "err", err)
		return 1
	}
	defer q.Close()
	s := deadline.New(q)
	fmt.Println("ready")
	for {
		if _, err := os.Stat(cfg.Gate); err == nil {
			break
		}
		if ctx.Err() != nil {
			return 1
		}
		time.Sleep(time.Millisecond)
	}
	total, empty, failures := 0, 0, 0
	for empty < 2 && ctx.Err() == nil {
		n, err := s.Deadlines(ctx)
		total += n
		switch {
		case err != nil:
			failures++
			log.Error("chaos sweeper: deadline sweep", "err", err)
			if failures > 50 {
				return 1
			}
		case n == 0:
			empty++
			time.Sleep(20 * time.Millisecond)
		default:
			empty = 0
		}
	}
	fmt.Printf("expired %d\n", total)
	return 0
}
