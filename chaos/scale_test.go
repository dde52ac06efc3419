//go:build chaos

package chaos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// scale sizes every scenario. QUEUETY_CHAOS_SCALE picks a preset ("small",
// the default, or "full"); the variables named in envInts and envDurations
// override single fields.
type scale struct {
	Name        string
	Workers     int // worker processes per scenario
	Concurrency int // handlers per worker

	Jobs      int // "jobs": no-op jobs
	JobKills  int // "jobs": SIGKILLs of random workers
	Workflows int // "workflows": 3-step workflows
	WFKills   int // "workflows": SIGKILLs
	FanOuts   int // "fanout": workflows with a for_each step
	FanItems  int // "fanout": items per for_each step (one branch job each)
	FanKills  int // "fanout": SIGKILLs
	DBJobs    int // "mariadb": no-op jobs
	DBKills   int // "mariadb": kill -9 of the server, then a restart
	Sweepers  int // "deadlines": sweeper processes
	Expired   int // "deadlines": workflows past their deadline
	Hangers   int // "shutdown": workers whose handler ignores ctx
	Restarts  int // "restarts": SIGTERMs of random workers (graceful restarts)
	Callbacks int // "callbacks": batches with a slow then callback, and as many workflows with a slow deadline callback

	DBDown        time.Duration // how long the server stays dead
	StaleTimeout  time.Duration // queuety.WithStaleTimeout of the workers
	DBStale       time.Duration // the same in the "mariadb" scenario
	Lease         time.Duration // worker.LeaseInterval
	StaleSweep    time.Duration // worker.Intervals.Stale
	Poll          time.Duration // worker.PollInterval
	Shutdown      time.Duration // worker.ShutdownTimeout
	HardStop      time.Duration // worker.HardStopTimeout
	StopBound     time.Duration // extra time a worker gets to exit after the shutdown timeout
	JobSleep      time.Duration // how long each no-op job and step takes
	CallbackSleep time.Duration // "callbacks": how long each callback takes
	Timeout       time.Duration // how long one scenario may take to finish its work

	// Defaults (QUEUETY_CHAOS_DEFAULTS=1) runs the workers with the
	// engine's default lease, poll, stale timeout and sweep intervals, and
	// dispatches jobs with the default backoff, to measure recovery as
	// shipped.
	Defaults bool

	Scenarios map[string]bool // QUEUETY_CHAOS_SCENARIOS: which to run (all when empty)
	AllowHung bool            // QUEUETY_CHAOS_ALLOW_HUNG=1: report hung processes, do not fail
	Seed      int64           // QUEUETY_CHAOS_SEED
}

var presets = map[string]scale{
	"small": {
		Name: "small", Workers: 4, Concurrency: 8,
		Jobs: 10_000, JobKills: 5, Workflows: 2000, WFKills: 5, DBJobs: 10_000, DBKills: 2,
		FanOuts: 40, FanItems: 10, FanKills: 3, Sweepers: 6, Expired: 1000, Hangers: 2, Restarts: 3, Callbacks: 4,
		DBDown: 2 * time.Second, Timeout: 90 * time.Second,
	},
	"full": {
		Name: "full", Workers: 16, Concurrency: 10,
		Jobs: 100_000, JobKills: 20, Workflows: 20_000, WFKills: 20, DBJobs: 100_000, DBKills: 3,
		FanOuts: 2000, FanItems: 10, FanKills: 20, Sweepers: 8, Expired: 5000, Hangers: 16, Restarts: 20, Callbacks: 40,
		DBDown: 5 * time.Second, Timeout: 30 * time.Minute,
	},
}

// Defaults shared by the presets: fast recovery of a killed worker's
// jobs (a claim not renewed for 4 s is stale, stale sweeps every 500 ms).
const (
	defaultStale      = 4 * time.Second
	defaultDBStale    = 20 * time.Second
	defaultLease      = 500 * time.Millisecond
	defaultStaleSweep = 500 * time.Millisecond
	defaultPoll       = 100 * time.Millisecond
	defaultShutdown   = 3 * time.Second
	defaultHardStop   = 2 * time.Second // within defaultStopBound
	defaultStopBound  = 5 * time.Second
	// defaultCallbackSleep leaves time to see every callback of the
	// "callbacks" scenario start and to SIGKILL its workers mid-run.
	defaultCallbackSleep = 8 * time.Second
)

func loadScale(t *testing.T) scale {
	t.Helper()
	name := os.Getenv("QUEUETY_CHAOS_SCALE")
	if name == "" {
		name = "small"
	}
	s, ok := presets[name]
	if !ok {
		t.Fatalf("QUEUETY_CHAOS_SCALE=%q: want small or full", name)
	}
	s.StaleTimeout, s.DBStale, s.Lease, s.StaleSweep = defaultStale, defaultDBStale, defaultLease, defaultStaleSweep
	s.Poll, s.Shutdown, s.StopBound, s.HardStop = defaultPoll, defaultShutdown, defaultStopBound, defaultHardStop
	s.CallbackSleep = defaultCallbackSleep
	s.Seed = time.Now().UnixNano()
	if os.Getenv("QUEUETY_CHAOS_DEFAULTS") == "1" {
		s.Defaults = true
		s.StaleTimeout, s.DBStale, s.Lease = queuetytype.DefaultStaleTimeout, queuetytype.DefaultStaleTimeout, worker.LeaseIntervalDefault
		s.StaleSweep, s.Poll, s.Shutdown = deadline.StaleInterval, worker.PollIntervalDefault, worker.ShutdownTimeoutDefault
		s.HardStop, s.StopBound = worker.HardStopTimeoutDefault, max(s.StopBound, worker.HardStopTimeoutDefault+5*time.Second)
		s.Timeout = max(s.Timeout, 20*time.Minute)
	}

	ints := map[string]*int{
		"WORKERS": &s.Workers, "CONCURRENCY": &s.Concurrency,
		"JOBS": &s.Jobs, "JOB_KILLS": &s.JobKills, "WORKFLOWS": &s.Workflows, "WORKFLOW_KILLS": &s.WFKills,
		"FANOUTS": &s.FanOuts, "FANOUT_ITEMS": &s.FanItems, "FANOUT_KILLS": &s.FanKills,
		"DB_JOBS": &s.DBJobs, "DB_KILLS": &s.DBKills, "SWEEPERS": &s.Sweepers, "EXPIRED": &s.Expired,
		"HANGERS": &s.Hangers, "RESTARTS": &s.Restarts, "CALLBACKS": &s.Callbacks,
	}
	for k, p := range ints {
		if v := os.Getenv("QUEUETY_CHAOS_" + k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				t.Fatalf("QUEUETY_CHAOS_%s=%q: want a whole number", k, v)
			}
			*p = n
		}
	}
	durs := map[string]*time.Duration{
		"DB_DOWN": &s.DBDown, "STALE_TIMEOUT": &s.StaleTimeout, "DB_STALE_TIMEOUT": &s.DBStale,
		"LEASE": &s.Lease, "STALE_SWEEP": &s.StaleSweep, "POLL": &s.Poll,
		"SHUTDOWN_TIMEOUT": &s.Shutdown, "HARD_STOP": &s.HardStop, "STOP_BOUND": &s.StopBound, "JOB_SLEEP": &s.JobSleep, "TIMEOUT": &s.Timeout,
		"CALLBACK_SLEEP": &s.CallbackSleep,
	}
	for k, p := range durs {
		if v := os.Getenv("QUEUETY_CHAOS_" + k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("QUEUETY_CHAOS_%s=%q: %v", k, v, err)
			}
			*p = d
		}
	}
	if v := os.Getenv("QUEUETY_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("QUEUETY_CHAOS_SEED=%q: %v", v, err)
		}
		s.Seed = n
	}
	s.AllowHung = os.Getenv("QUEUETY_CHAOS_ALLOW_HUNG") == "1"
	if v := os.Getenv("QUEUETY_CHAOS_SCENARIOS"); v != "" {
		s.Scenarios = map[string]bool{}
		for _, n := range strings.Split(v, ",") {
			s.Scenarios[strings.TrimSpace(n)] = true
		}
	}
	if s.Workers < 1 || s.Concurrency < 1 {
		t.Fatalf("QUEUETY_CHAOS_WORKERS and QUEUETY_CHAOS_CONCURRENCY must be at least 1")
	}
	if s.FanItems < 1 {
		t.Fatalf("QUEUETY_CHAOS_FANOUT_ITEMS must be at least 1")
	}
	return s
}

func (s scale) String() string {
	return fmt.Sprintf("scale %s: %d workers × %d concurrency; jobs %d (%d SIGKILLs), workflows %d (%d SIGKILLs), "+
		"fanout %d workflows × %d items (%d SIGKILLs), mariadb/postgres %d jobs (%d kills, down %s), deadlines %d sweepers × %d workflows, shutdown %d hung handlers, "+
		"restarts %d jobs (%d SIGTERMs), callbacks %d + %d of %s; stale timeout %s (mariadb/postgres %s), lease %s, stale sweep %s, poll %s, "+
		"shutdown timeout %s + %s, backoff %s; seed %d",
		s.Name, s.Workers, s.Concurrency, s.Jobs, s.JobKills, s.Workflows, s.WFKills, s.FanOuts, s.FanItems, s.FanKills, s.DBJobs, s.DBKills, s.DBDown,
		s.Sweepers, s.Expired, s.Hangers, s.Jobs, s.Restarts, s.Callbacks, s.Callbacks, s.CallbackSleep, s.StaleTimeout, s.DBStale, s.Lease, s.StaleSweep, s.Poll,
		s.Shutdown, s.StopBound, s.backoffName(), s.Seed)
}

func (s scale) runs(name string) bool { return len(s.Scenarios) == 0 || s.Scenarios[name] }

func (s scale) backoffName() string {
	if s.Defaults {
		return "default (exponential)"
	}
	return "none"
}

// jobOptions are the options of every job and step: attempts enough for
// any number of SIGKILLs and, unless Defaults, no backoff, so a recovered
// job is claimed again at once.
func (s scale) jobOptions() []queuety.JobOption {
	if s.Defaults {
		return []queuety.JobOption{queuety.MaxAttempts(attempts)}
	}
	return []queuety.JobOption{queuety.Retry(attempts, queuety.BackoffSeconds(0))}
}

const attempts = 100
