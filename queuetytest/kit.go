package queuetytest

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// Epoch is the time a Kit's fake clock starts at unless StartAt says
// otherwise: a fixed instant on a whole second, so dispatch and due times in
// test output never change from run to run.
var Epoch = time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)

// WorkTimeoutDefault bounds one Work or RunWorkflow call in real time. It
// is only reached by work that never runs out, such as a workflow that
// loops without end; the test then fails.
const WorkTimeoutDefault = 30 * time.Second

// Option configures a Kit.
type Option func(*config)

type config struct {
	start       time.Time
	logger      *slog.Logger
	clientOpts  []queuety.Option
	workTimeout time.Duration
}

// StartAt starts the kit's fake clock at t instead of Epoch.
func StartAt(t time.Time) Option { return func(c *config) { c.start = t } }

// WithLogger sends the client's and the worker's logs to l. By default a
// Kit discards them.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// ClientOptions adds options to the kit's queuety.Client, after the kit's
// own (its fake clock, its logger and an immediate deadline handoff), so
// they can override them.
func ClientOptions(opts ...queuety.Option) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// WorkTimeout sets how long one Work or RunWorkflow call may take in real
// time before the test fails (default WorkTimeoutDefault).
func WorkTimeout(d time.Duration) Option { return func(c *config) { c.workTimeout = d } }

// Kit is one test's queue: a queuety.Client on its own in-memory store, a
// fake clock, and a registry of handlers that Work runs. Create it with
// New; it is closed when the test ends. A Kit is safe for concurrent use,
// except that Work and RunWorkflow must not run at the same time.
type Kit struct {
	t      testing.TB
	clock  *queuety.FakeClock
	client *queuety.Client
	reg    *queuety.Registry
	cfg    config

	mu      sync.Mutex
	workers map[string]*worker.Worker // by their queue list
}

// New returns a Kit for the test t. Its store is an in-memory SQLite
// database of its own (nothing is shared between tests, and tests may run
// in parallel), a copy of one migrated when the process first needed it,
// so a kit opens in milliseconds. The client runs on a queuety.FakeClock
// that starts at Epoch and moves only when the test moves it. The client
// and its database are closed by t.Cleanup.
//
// The client expires a workflow past its deadline at once, also when no
// handler is registered for its OnDeadline callback (the callback job then
// waits, for RequireDispatched to find), instead of leaving the expiry to
// another worker for the deadline handoff (queuety.WithDeadlineHandoff).
func New(t testing.TB, opts ...Option) *Kit {
	t.Helper()
	cfg := config{start: Epoch, logger: slog.New(slog.DiscardHandler), workTimeout: WorkTimeoutDefault}
	for _, o := range opts {
		o(&cfg)
	}
	ctx := context.Background()
	clock := queuety.NewFakeClock(cfg.start)
	all := append([]queuety.Option{queuety.WithClock(clock), queuety.WithLogger(cfg.logger), queuety.WithDeadlineHandoff(-1)},
		cfg.clientOpts...)
	c, err := openDatabase(ctx, all)
	if err != nil {
		t.Fatalf("queuetytest: open the kit's database: %v", err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return &Kit{t: t, clock: clock, client: c, reg: queuety.NewRegistry(), cfg: cfg, workers: map[string]*worker.Worker{}}
}

// Client returns the kit's client. Pass it to the code under test wherever
// that code takes a *queuety.Client.
func (k *Kit) Client() *queuety.Client { return k.client }

// Clock returns the kit's fake clock.
func (k *Kit) Clock() *queuety.FakeClock { return k.clock }

// Now returns the fake time.
func (k *Kit) Now() time.Time { return k.clock.Now() }

// Advance moves the fake clock forward by d and returns the new time. It
// runs nothing itself: the next Work or RunWorkflow runs what fell due
// (Sleep steps, retries, delayed jobs, signal-wait timeouts, deadlines).
func (k *Kit) Advance(d time.Duration) time.Time { return k.clock.Advance(d) }

// Registry returns the kit's handler registry, which Work runs handlers
// from; register on it, or with the kit's Handle methods.
func (k *Kit) Registry() *queuety.Registry { return k.reg }

// HandleJob registers a plain-job handler (see queuety.Registry.HandleJob).
func (k *Kit) HandleJob(name string, fn queuety.JobFunc) { k.reg.HandleJob(name, fn) }

// HandleStep registers a workflow step handler.
func (k *Kit) HandleStep(name string, fn queuety.StepFunc) { k.reg.HandleStep(name, fn) }

// HandleDeadline registers a deadline or cancel callback (OnDeadline,
// OnCancel).
func (k *Kit) HandleDeadline(name string, fn queuety.CallbackFunc) { k.reg.HandleDeadline(name, fn) }

// HandleCompensation registers a compensation handler (CompensateWith).
func (k *Kit) HandleCompensation(name string, fn queuety.CallbackFunc) {
	k.reg.HandleCompensation(name, fn)
}

// HandleForEach registers the branch handler of a for-each step.
func (k *Kit) HandleForEach(name string, fn queuety.ForEachFunc) { k.reg.HandleForEach(name, fn) }

// HandleForEachItem registers the branch handler of a for-each step that
// needs only its item.
func (k *Kit) HandleForEachItem(name string, fn queuety.ForEachItemFunc) {
	k.reg.HandleForEachItem(name, fn)
}

// HandleReducer registers a for-each reducer.
func (k *Kit) HandleReducer(name string, fn queuety.ReducerFunc) { k.reg.HandleReducer(name, fn) }

// HandleRepeatCondition registers a repeat condition.
func (k *Kit) HandleRepeatCondition(name string, fn queuety.RepeatConditionFunc) {
	k.reg.HandleRepeatCondition(name, fn)
}

// ListJobs lists jobs through the kit's client; with ListWorkflows it
// makes a Kit a Source for the assertions.
func (k *Kit) ListJobs(ctx context.Context, f queuetytype.JobFilter) ([]*queuetytype.Job, error) {
	return k.client.ListJobs(ctx, f)
}

// ListWorkflows lists workflows through the kit's client.
func (k *Kit) ListWorkflows(ctx context.Context, f queuetytype.WorkflowFilter) ([]*queuetytype.Workflow, error) {
	return k.client.ListWorkflows(ctx, f)
}

// Work runs every job that is due on the fake clock and returns what it
// did. Each pass runs the sweeps once (stale claims, activity timeouts,
// signal-wait timeouts, workflow deadlines) and the schedule tick, then
// claims and runs due jobs one at a time, in the order workers claim them,
// until none is due; a workflow's next step runs in the same pass. Passes
// repeat while they find work, so a job a sweep enqueued on another queue
// runs too. Every queue that has jobs is worked.
//
// Handlers run on the kit's registry with a context derived from ctx.
// Their failures are recorded on the jobs as a worker records them
// (retried after their backoff, on the fake clock, or buried), not
// returned. A job whose handler the kit does not have stays pending.
// Errors of the store, and work that is still due after the work timeout,
// fail the test.
func (k *Kit) Work(ctx context.Context) worker.Stats {
	k.t.Helper()
	var total worker.Stats
	deadline := time.Now().Add(k.cfg.workTimeout)
	for {
		queues, err := k.queues(ctx)
		if err != nil {
			k.t.Fatalf("queuetytest: Work: %v", err)
			return total
		}
		// RunOnce returns once nothing is due, or when its budget is
		// spent; only a pass that ended before the deadline was idle.
		st, err := k.worker(queues).RunOnce(ctx, time.Until(deadline))
		add(&total, st)
		if err != nil {
			k.t.Fatalf("queuetytest: Work: %v", err)
			return total
		}
		if !time.Now().Before(deadline) {
			k.t.Fatalf("queuetytest: Work: jobs were still due after %s (a workflow that loops without end?)", k.cfg.workTimeout)
			return total
		}
		after, err := k.queues(ctx)
		if err != nil {
			k.t.Fatalf("queuetytest: Work: %v", err)
			return total
		}
		// A pass that ran, handed back or swept something may have made
		// more work due, on queues it did not claim from.
		if st.Claimed == 0 && st.HandedBack == 0 && st.Swept.Total() == 0 && st.SchedulesFired == 0 && slices.Equal(queues, after) {
			return total
		}
	}
}

// add adds the counts of st to total.
func add(total *worker.Stats, st worker.Stats) {
	total.Claimed += st.Claimed
	total.Succeeded += st.Succeeded
	total.Failed += st.Failed
	total.Stale += st.Stale
	total.HandedBack += st.HandedBack
	total.SchedulesFired += st.SchedulesFired
	total.Swept.WorkflowsExpired += st.Swept.WorkflowsExpired
	total.Swept.WaitsTimedOut += st.Swept.WaitsTimedOut
	total.Swept.JobsTimedOut += st.Swept.JobsTimedOut
	total.Swept.JobsRecovered += st.Swept.JobsRecovered
	total.Swept.BatchCallbacks += st.Swept.BatchCallbacks
	total.Swept.WorkflowOverruns += st.Swept.WorkflowOverruns
	total.Swept.WorkflowCallbacks += st.Swept.WorkflowCallbacks
}

// queues lists the queues that have jobs, and "default", sorted.
func (k *Kit) queues(ctx context.Context) ([]string, error) {
	counts, err := k.client.Counts(ctx)
	if err != nil {
		return nil, err
	}
	qs := []string{queuetytype.DefaultQueue}
	for _, c := range counts {
		if !slices.Contains(qs, c.Queue) {
			qs = append(qs, c.Queue)
		}
	}
	slices.Sort(qs)
	return qs, nil
}

// worker returns the kit's worker for a list of queues, made once per
// list.
func (k *Kit) worker(queues []string) *worker.Worker {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := strings.Join(queues, "\x00")
	if w, ok := k.workers[key]; ok {
		return w
	}
	w := worker.New(k.client, worker.WithRegistry(k.reg), worker.Queues(queues...), worker.Concurrency(1),
		worker.NoMaintenance(), worker.WithLogger(k.cfg.logger))
	k.workers[key] = w
	return w
}

// template is a migrated database, made once per process.
var template struct {
	once sync.Once
	db   []byte
	err  error
}

// openDatabase opens a new in-memory database holding a copy of the
// migrated template. Migrating takes far longer than copying, above all
// under the race detector, which slows the pure-Go SQLite down many times.
func openDatabase(ctx context.Context, opts []queuety.Option) (*queuety.Client, error) {
	template.once.Do(func() { template.db, template.err = migrateTemplate(ctx) })
	if template.err != nil {
		return nil, template.err
	}
	// The SQLite store keeps one connection, so every client has its own
	// in-memory database, which lives until the client is closed.
	c, err := queuety.Open(ctx, memoryDSN, append(opts, queuety.SkipMigrate())...)
	if err != nil {
		return nil, err
	}
	if err := clientseam.StoreOf(c).(*sqlite.Store).Deserialize(ctx, template.db); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// memoryDSN names a new in-memory SQLite database.
const memoryDSN = "sqlite://:memory:"

// migrateTemplate migrates a new in-memory database and returns its bytes.
func migrateTemplate(ctx context.Context) ([]byte, error) {
	c, err := queuety.Open(ctx, memoryDSN, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return clientseam.StoreOf(c).(*sqlite.Store).Serialize(ctx)
}
