// Command river runs River's drain of no-op jobs on PostgreSQL and prints
// the result as JSON, for `queuety-worker bench --peer river` to print
// beside Queuety's drains. It is a module of its own so that the library
// does not depend on River.
//
// Each run creates a database of its own on the server -dsn names (the
// DSN's database is only where it connects to create and drop it),
// migrates River's tables into it, inserts -jobs no-op jobs (untimed),
// then times clients draining them, and drops the database.
//
// Scenarios:
//
//	drain-<N>w  N clients in this process sharing one pool, each with
//	            -concurrency workers (MaxWorkers) and a 1 ms fetch
//	            cooldown: the concurrency of Queuety's drain-<N>w, whose
//	            workers claim again as soon as slots free
//	bench       one client with 2,000 workers and River's default fetch
//	            settings, as `river bench` runs it
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverVersion is the River release go.mod requires.
const riverVersion = "v0.51.2"

// benchWorkers is the worker count of `river bench`.
const benchWorkers = 2000

// Report is what the program prints.
type Report struct {
	Peer    string    `json:"peer"`
	Version string    `json:"version"`
	Server  string    `json:"server"`
	Jobs    int       `json:"jobs"`
	Runs    int       `json:"runs"`
	Results []*Result `json:"results"`
}

// Result is one scenario's measurements, with the settings it ran under.
type Result struct {
	Name      string    `json:"name"`
	Unit      string    `json:"unit"`
	Runs      []float64 `json:"runs"`
	Median    float64   `json:"median"`
	ClientCPU []float64 `json:"client_cpu_us_per_unit,omitempty"`
	ServerCPU []float64 `json:"server_cpu_us_per_unit,omitempty"`
	// Extra holds the settings: clients, workers_per_client and
	// fetch_cooldown_ms.
	Extra map[string]float64 `json:"extra"`

	clients, workers int
	cooldown         time.Duration
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	dsn := flag.String("dsn", "postgres://127.0.0.1:5432/test", "PostgreSQL server and database to connect to (a database of its own is created per run)")
	jobs := flag.Int("jobs", 20000, "no-op jobs per run")
	runs := flag.Int("runs", 3, "runs per scenario (the median is reported)")
	concurrency := flag.Int("concurrency", 100, "workers of each client in the drain-<N>w scenarios")
	scenarios := flag.String("scenarios", "drain-1w,drain-4w,bench", "comma-separated scenarios")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *dsn, *jobs, *runs, *concurrency, strings.Split(*scenarios, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, dsn string, jobs, runs, concurrency int, scenarios []string) error {
	if jobs < 1 || runs < 1 || concurrency < 1 {
		return errors.New("-jobs, -runs and -concurrency must be at least 1")
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(ctx)
	rep := &Report{Peer: "river", Version: riverVersion, Jobs: jobs, Runs: runs}
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&rep.Server); err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	rep.Server = "PostgreSQL " + rep.Server
	for _, s := range scenarios {
		r := &Result{Name: "river-" + strings.TrimSpace(s), Unit: "jobs/s", clients: 1, workers: benchWorkers, cooldown: river.FetchCooldownDefault}
		if n, ok := strings.CutPrefix(strings.TrimSpace(s), "drain-"); ok {
			c, err := strconv.Atoi(strings.TrimSuffix(n, "w"))
			if err != nil || c < 1 || !strings.HasSuffix(n, "w") {
				return fmt.Errorf("scenario %q: want drain-<N>w or bench", s)
			}
			r.clients, r.workers, r.cooldown = c, concurrency, time.Millisecond
		} else if strings.TrimSpace(s) != "bench" {
			return fmt.Errorf("scenario %q: want drain-<N>w or bench", s)
		}
		r.Extra = map[string]float64{"clients": float64(r.clients), "workers_per_client": float64(r.workers),
			"fetch_cooldown_ms": float64(r.cooldown) / float64(time.Millisecond)}
		rep.Results = append(rep.Results, r)
	}
	serverPIDs := func() []int { return postgresPIDs() }
	for range runs {
		for _, r := range rep.Results {
			rate, self, server, err := drainOnce(ctx, admin, dsn, jobs, r, serverPIDs)
			if err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
			r.Runs = append(r.Runs, rate)
			r.ClientCPU = append(r.ClientCPU, self)
			if server >= 0 {
				r.ServerCPU = append(r.ServerCPU, server)
			}
		}
	}
	for _, r := range rep.Results {
		r.Median = median(r.Runs)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// drainOnce creates a database, migrates River into it, inserts jobs
// (untimed), times r's clients draining them and drops the database. It
// returns jobs/s and the CPU µs per job of this process and of the
// server's processes (-1 when the server does not run on this machine).
func drainOnce(ctx context.Context, admin *pgx.Conn, dsn string, jobs int, r *Result, serverPIDs func() []int) (rate, selfUS, serverUS float64, err error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "river_bench_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return 0, 0, 0, fmt.Errorf("create database: %w", err)
	}
	defer func() {
		_, _ = admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return 0, 0, 0, err
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = int32(max(4, 4*r.clients))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("pool: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet()})
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, 0, 0, fmt.Errorf("migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	var done atomic.Int64
	finished := make(chan struct{})
	var once sync.Once
	clients := make([]*river.Client[pgx.Tx], r.clients)
	for i := range clients {
		rc := &river.Config{Logger: quiet(), Workers: workers,
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.workers}}}
		if r.cooldown != river.FetchCooldownDefault {
			// As Queuety's drain workers: claim again once slots free,
			// and poll every 10 ms when idle.
			rc.FetchCooldown, rc.FetchPollInterval = r.cooldown, 10*time.Millisecond
		}
		if clients[i], err = river.NewClient(driver, rc); err != nil {
			return 0, 0, 0, err
		}
	}
	// Seed through the first client, 1,000 rows an insert.
	for i := 0; i < jobs; i += 1000 {
		params := make([]river.InsertManyParams, min(1000, jobs-i))
		for j := range params {
			params[j] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := clients[0].InsertManyFast(ctx, params); err != nil {
			return 0, 0, 0, fmt.Errorf("insert: %w", err)
		}
	}
	var subs []func()
	for _, c := range clients {
		events, cancel := c.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: jobs})
		subs = append(subs, cancel)
		go func() {
			for range events {
				if done.Add(1) == int64(jobs) {
					once.Do(func() { close(finished) })
				}
			}
		}()
	}
	defer func() {
		for _, cancel := range subs {
			cancel()
		}
	}()
	self0, server0 := selfCPU(), processesCPU(serverPIDs())
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, c := range clients {
		if err := c.Start(runCtx); err != nil {
			return 0, 0, 0, fmt.Errorf("start: %w", err)
		}
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Minute):
		return 0, 0, 0, fmt.Errorf("%d of %d jobs completed within 10 minutes", done.Load(), jobs)
	}
	elapsed := time.Since(start)
	selfUS = float64((selfCPU() - self0).Microseconds()) / float64(jobs)
	serverUS = -1
	if server1 := processesCPU(serverPIDs()); server0 >= 0 && server1 >= 0 {
		serverUS = float64((server1 - server0).Microseconds()) / float64(jobs)
	}
	for _, c := range clients {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = c.Stop(stopCtx)
		cancel()
	}
	var completed int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed); err != nil {
		return 0, 0, 0, fmt.Errorf("count completed: %w", err)
	}
	if completed != jobs {
		return 0, 0, 0, fmt.Errorf("after the drain %d of %d jobs are completed", completed, jobs)
	}
	return float64(jobs) / elapsed.Seconds(), selfUS, serverUS, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// postgresPIDs lists the processes named postgres on this machine (the
// server and its backends: PostgreSQL runs one process a connection).
func postgresPIDs() []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || strings.TrimSpace(string(b)) != "postgres" {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
