package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queuety/queuety-go/internal/egress"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

func workCommand() *Command {
	return &Command{
		Name:    "work",
		Summary: "run a worker: claim due jobs and workflow steps and run their handlers",
		Help: `Without --once the worker runs until SIGINT or SIGTERM, with the periodic
sweeps (workflow deadlines, signal-wait timers, stranded workflow waits,
activity timeouts, stale claims, running workflows past their last step). On a signal it stops claiming, lets running handlers finish for up
to --shutdown-timeout, cancels the handlers still running, hands their jobs
back and exits 0. A handler that ignores the cancellation for
--hard-stop-timeout more is left behind: the worker exits 1 and names its
job, which stays claimed until its lease expires and is then recovered.

A handler that ignores its cancelled context (its start-to-close timeout or
its workflow's deadline passed, or its job was taken away) for
--abandon-grace is abandoned: its attempt is recorded as failed, so the job
is retried or buried as on a timeout, and its slot is freed while it runs
on. More than --max-abandoned abandoned handlers still running make the
worker unhealthy: it logs an error, the queuety_workers_unhealthy metric is
1, and the abandoned handlers past the limit hold their slots again. With
--exit-when-unhealthy (the default) it then stops as on a signal and exits
1, so that a supervisor (systemd, Kubernetes) restarts it: only ending the
process ends those handlers.

Retention: the worker also runs a cleaner that deletes
completed jobs and log rows older than --retain-completed (7 days),
completed, failed and cancelled workflows with their rows older than
--retain-workflows (30 days), and finished batches older than
--retain-batches (30 days); buried jobs are kept unless --retain-buried is
given. It never deletes a running, waiting or paused workflow or a row one
still needs. It deletes --retention-batch rows per transaction, and one
worker of the fleet runs it at a time, every --retention-interval (with
--once, when a pass is due, within --max-time). --retention off turns it
off.

With --once (for cron) it runs every sweep once, drains what is due within
--max-time, waits for the running handlers and prints a summary. It exits
non-zero only when the store cannot be used, a sweep fails, or a handler
ignored its cancelled context past --hard-stop-timeout (its job stays
claimed and is recovered by lease expiry); failed jobs are recorded on the
jobs.

--metrics-listen serves Prometheus metrics at /metrics. Protect it with a
bearer token ($` + EnvMetricsToken + `, --metrics-token-file) or basic
authentication ($` + EnvMetricsBasicAuth + `, --metrics-basic-auth-file);
without either, an address other machines can reach is logged as a warning.

A worker only claims jobs whose handler it has, plus the engine's internal
steps (delays and signal waits). Jobs for other handlers stay pending for a
worker that has them; they are never buried for lack of a handler.

Deadline handlers: a running workflow past its deadline whose deadline
handler this worker does not have is left for --deadline-handoff to a worker
that has it, such as Queuety PHP's sweep, which calls PHP deadline classes
in-process; its steps are not run meanwhile. After the handoff the worker
expires it and enqueues the handler as a job. A Go deadline handler of a
workflow that PHP's sweep expired (PHP calls only PHP classes) is enqueued
by the next sweep of a worker that has it, once.

Batch callbacks and chain catch handlers run as jobs, once each. With
--php-batch-callbacks QUEUE, one this worker does not have (a PHP class)
becomes a job for Queuety PHP's bridge class QueuetyGo\BatchCallback on
QUEUE, for a PHP worker with the bridge installed (php/ in the repository).
The sweep enqueues the Go callbacks of batches that PHP workers finished.
--php-callbacks QUEUE does the same for every callback class: batch
callbacks, chain catch handlers, and a workflow's compensations and
on_cancel handler, which become jobs for QueuetyGo\WorkflowCallback; the
bridge runs a PHP class and hands a name it does not have back to Go
workers, and the compensations run newest first whichever side has each.
With it the sweep also hands workflows that Queuety PHP failed or cancelled
to the bridge once, which enqueues the Go compensations and cancel callback
PHP skipped.

Webhooks: the worker POSTs to the registered webhooks (see webhook), but
never to loopback, private, link-local (cloud metadata), carrier-grade NAT,
multicast or reserved addresses, checked on the address it connects to.
--webhook-allow (or QUEUETY_WEBHOOK_ALLOW) names the ones it may reach all
the same, for example a receiver on this machine in development.`,
		Examples: []string{
			Program + " work",
			Program + " work --queues critical,default --concurrency 32",
			Program + " work --queues providers --min-workers 2 --max-workers 6 --max-execution-time 300",
			"* * * * * " + Program + " work --once --max-time 50s --wp-config /var/www/html/wp-config.php",
			Program + " --log-format json work --metrics-listen 127.0.0.1:9090",
			Program + " work --webhook-allow 127.0.0.1,hooks.internal",
			Program + " work --retain-completed 3d --retain-workflows 90d --retain-buried 30d",
		},
		LogLevel: "info",
		Setup: func(fs *flag.FlagSet) RunFunc {
			once := fs.Bool("once", false, "drain what is due, run the sweeps once, and exit (for cron)")
			maxTime := durationFlag(fs, "max-time", 50*time.Second, "with --once: the time budget for claiming jobs")
			queues := queuesFlags(fs)
			concurrency := fs.Int("concurrency", worker.ConcurrencyDefault, "handlers to run at once")
			idlePoll := durationFlag(fs, "idle-poll", worker.IdlePollIntervalDefault, "while the cross-process wake-up is live, the longest an idle worker waits before it looks for jobs nothing woke it for (Queuety PHP's, another database user's, a Galera node this process cannot reach); otherwise it looks every second")
			minWorkers := fs.Int("min-workers", 0, "adaptive concurrency: the fewest handlers to run at once; needs --max-workers (Queuety's adaptive pool)")
			maxWorkers := fs.Int("max-workers", 0, "adaptive concurrency: the most handlers to run at once, reached while jobs wait; replaces --concurrency")
			scaleInterval := durationFlag(fs, "scale-interval", worker.ScaleIntervalDefault, "with --max-workers: how often the concurrency is resized (QUEUETY_WORKER_POOL_SCALE_INTERVAL)")
			idleGrace := durationFlag(fs, "scale-idle-grace", worker.ScaleIdleGraceDefault, "with --max-workers: how long no job may have waited before the concurrency shrinks (QUEUETY_WORKER_POOL_IDLE_GRACE)")
			maxExec := durationFlag(fs, "max-execution-time", 0, "fail an attempt whose handler runs longer than this, as Queuety's QUEUETY_MAX_EXECUTION_TIME (default $"+EnvMaxExecutionTime+" in seconds, else none)")
			shutdown := durationFlag(fs, "shutdown-timeout", worker.ShutdownTimeoutDefault, "grace period for running handlers when stopping")
			hardStop := durationFlag(fs, "hard-stop-timeout", worker.HardStopTimeoutDefault, "after the grace period, how long cancelled handlers get to return before the worker exits without them")
			abandonGrace := durationFlag(fs, "abandon-grace", worker.AbandonGraceDefault, "how long a handler whose context was cancelled (timeout, deadline, job taken away) gets to return before it is abandoned and its slot freed")
			holdClaims := durationFlag(fs, "hold-claims", 0, "hold the claims of short plain jobs for up to this bound (MySQL and MariaDB, not on a Galera cluster; see worker.HoldClaims): a completed job changes its status once; 0 claims as usual")
			maxAbandoned := fs.Int("max-abandoned", 0, "abandoned handlers still running that the worker tolerates before it is unhealthy (default: --concurrency)")
			exitUnhealthy := fs.Bool("exit-when-unhealthy", true, "stop and exit 1 when the worker is unhealthy (more than --max-abandoned abandoned handlers), for a supervisor to restart it")
			retain := retentionFlags(fs) // work_retention.go
			metricsAddr := fs.String("metrics-listen", "", "serve Prometheus metrics at http://`addr`/metrics while working (e.g. 127.0.0.1:9090)")
			metricsToken := newSecretFlag(fs, "metrics-token", EnvMetricsToken, "with --metrics-listen: require this bearer `token`", "the metrics token")
			metricsBasic := newSecretFlag(fs, "metrics-basic-auth", EnvMetricsBasicAuth, "with --metrics-listen: require HTTP basic authentication as `user:pass`", "the metrics USER:PASS")
			handoff := durationFlag(fs, "deadline-handoff", queuetytype.DefaultDeadlineHandoff, "how long past a running workflow's deadline to leave its expiry to a worker that has its deadline handler (Queuety PHP's sweep) when this one lacks it; 0 expires at once")
			phpBatch := fs.String("php-batch-callbacks", "", "hand the batch callbacks and chain catch handlers this worker does not have to Queuety PHP, as jobs for QueuetyGo\\BatchCallback (php/) on this `queue`")
			phpAll := fs.String("php-callbacks", "", "hand every callback this worker does not have (batch callbacks, chain catch handlers, compensations, on_cancel handlers) to Queuety PHP, as jobs for the bridge classes (php/) on this `queue`")
			allow := webhookAllowFlag(fs)
			return func(e *Env, _ []string) error {
				qs, err := queues()
				if err != nil {
					return err
				}
				hooks, err := allow()
				if err != nil {
					return err
				}
				switch {
				case *concurrency < 1:
					return Usagef("--concurrency must be at least 1, got %d", *concurrency)
				case *idlePoll <= 0:
					return Usagef("--idle-poll must be positive, got %s", *idlePoll)
				case *maxTime <= 0:
					return Usagef("--max-time must be positive, got %s", *maxTime)
				case *shutdown < 0:
					return Usagef("--shutdown-timeout must not be negative, got %s", *shutdown)
				case *hardStop < 0:
					return Usagef("--hard-stop-timeout must not be negative, got %s", *hardStop)
				case *handoff < 0:
					return Usagef("--deadline-handoff must not be negative, got %s", *handoff)
				case *abandonGrace < 0:
					return Usagef("--abandon-grace must not be negative, got %s", *abandonGrace)
				case *maxAbandoned < 0:
					return Usagef("--max-abandoned must not be negative, got %d", *maxAbandoned)
				case *maxExec < 0:
					return Usagef("--max-execution-time must not be negative, got %s", *maxExec)
				case *holdClaims < 0:
					return Usagef("--hold-claims must not be negative, got %s", *holdClaims)
				}
				scale, err := scaleOptions(fs, *minWorkers, *maxWorkers, *scaleInterval, *idleGrace)
				if err != nil {
					return err
				}
				if !flagGiven(fs, "max-execution-time") {
					if *maxExec, err = envMaxExecutionTime(); err != nil {
						return err
					}
				}
				opts := []worker.Option{worker.WithRegistry(e.Registry), worker.Queues(qs...), worker.Concurrency(*concurrency),
					worker.ShutdownTimeout(*shutdown), worker.HardStopTimeout(*hardStop), worker.WithLogger(e.Logger()),
					worker.AbandonGrace(*abandonGrace), worker.StopWhenUnhealthy(*exitUnhealthy), worker.IdlePollInterval(*idlePoll)}
				if flagGiven(fs, "max-abandoned") {
					opts = append(opts, worker.MaxAbandoned(*maxAbandoned))
				}
				if *holdClaims > 0 {
					opts = append(opts, worker.HoldClaims(*holdClaims))
				}
				opts = append(append(opts, scale...), worker.MaxExecutionTime(*maxExec))
				ropt, err := retain()
				if err != nil {
					return err
				}
				opts = append(opts, ropt)
				ctx, stop := signal.NotifyContext(e.Ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				e.Ctx = ctx
				if *handoff == 0 {
					*handoff = -1 // the option's "expire at once"
				}
				var mauth metricsAuth
				if *metricsAddr == "" && (*metricsToken.value != "" || *metricsToken.file != "" || *metricsBasic.value != "" || *metricsBasic.file != "") {
					return Usagef("--metrics-token and --metrics-basic-auth need --metrics-listen")
				}
				if *metricsAddr != "" {
					if mauth, err = readMetricsAuth(e, metricsToken, metricsBasic); err != nil {
						return err
					}
				}
				mx, err := startMetrics(e, *metricsAddr, mauth)
				if err != nil {
					return err
				}
				copts := []queuety.Option{queuety.WithDeadlineHandoff(*handoff), queuety.WithPHPBatchCallbacks(*phpBatch), e.observer(mx.observer())}
				if *phpAll != "" {
					copts = append(copts, queuety.WithPHPCallbacks(*phpAll))
				}
				c, err := e.OpenOrCreate(copts...)
				if err != nil {
					mx.stop()
					return err
				}
				defer c.Close()
				defer mx.stop() // before the client closes
				if err := mx.attach(c); err != nil {
					return err
				}
				w := worker.New(c, append(append(opts, hooks), e.workerOptions()...)...)
				warnNoHandlers(e, c, qs)
				if !*once {
					if err := w.Run(ctx); err != nil {
						return fmt.Errorf("worker: %w", err)
					}
					return nil
				}
				start := time.Now()
				st, err := w.RunOnce(ctx, *maxTime)
				took := time.Since(start)
				err = cleanStop(ctx, err)
				if e.Globals.JSON {
					out := map[string]any{
						"claimed": st.Claimed, "succeeded": st.Succeeded, "failed": st.Failed, "handed_back": st.HandedBack,
						"stale": st.Stale, "abandoned": st.Abandoned, "swept": map[string]int{
							"workflows_expired": st.Swept.WorkflowsExpired, "waits_timed_out": st.Swept.WaitsTimedOut,
							"jobs_timed_out": st.Swept.JobsTimedOut, "jobs_recovered": st.Swept.JobsRecovered,
							"batch_callbacks": st.Swept.BatchCallbacks, "workflow_overruns": st.Swept.WorkflowOverruns,
							"workflow_callbacks": st.Swept.WorkflowCallbacks,
						},
						"schedules_fired": st.SchedulesFired,
						"duration_ms":     took.Milliseconds(), "interrupted": ctx.Err() != nil,
					}
					if err != nil {
						out["error"] = cleanError(err)
					}
					if perr := printJSON(e.Stdout, out); perr != nil {
						return perr
					}
				} else {
					fmt.Fprintf(e.Stdout, "work --once: claimed %d, succeeded %d, failed %d, handed back %d, stale %d; swept %d (workflows expired %d, waits timed out %d, jobs timed out %d, jobs recovered %d, batch callbacks %d, workflow callbacks %d, workflow overruns %d); schedules fired %d; %s\n",
						st.Claimed, st.Succeeded, st.Failed, st.HandedBack, st.Stale, st.Swept.Total(),
						st.Swept.WorkflowsExpired, st.Swept.WaitsTimedOut, st.Swept.JobsTimedOut, st.Swept.JobsRecovered,
						st.Swept.BatchCallbacks, st.Swept.WorkflowCallbacks, st.Swept.WorkflowOverruns, st.SchedulesFired, took.Round(time.Millisecond))
				}
				if err != nil {
					return fmt.Errorf("work --once: %w", err)
				}
				return nil
			}
		},
	}
}

// warnNoHandlers warns when the worker has no handlers of its own while
// jobs wait in its queues: it only runs the engine's internal steps and
// the sweeps, so those jobs wait for another worker.
func warnNoHandlers(e *Env, c *queuety.Client, queues []string) {
	if len(e.Registry.Names()) > 0 {
		return
	}
	counts, err := c.Counts(e.Ctx)
	if err != nil {
		return
	}
	polled := map[string]bool{}
	for _, q := range queues {
		polled[q] = true
	}
	var pending int64
	for _, qc := range counts {
		if polled[qc.Queue] && qc.Status == queuetytype.JobPending {
			pending += qc.Count
		}
	}
	if pending > 0 {
		e.Logger().Warn("queuety: this worker has no handlers registered: it runs only the engine's internal steps "+
			"(delays, waits, for-each expansion, ...) and the sweeps; jobs for other handlers wait for a worker that has them "+
			"(build the CLI into your program with cli.Main(registry) to add yours)", "pending_jobs", pending, "queues", queues)
	}
}

// queuesFlags declares --queues and its wp queuety spelling --queue and
// returns a function that reads the queue list.
func queuesFlags(fs *flag.FlagSet) func() ([]string, error) {
	queues := fs.String("queues", "default", "comma-separated `queues` to claim from, in priority order")
	queue := fs.String("queue", "", "the same as --queues (wp queuety's spelling)")
	return func() ([]string, error) {
		var given []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "queue" || f.Name == "queues" {
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 1 {
			return nil, Usagef("give --queues or --queue, not both")
		}
		list := *queues
		if len(given) == 1 && given[0] == "--queue" {
			list = *queue
		}
		qs := splitList(list)
		if len(qs) == 0 {
			return nil, Usagef("%s names no queue", orString(strings.Join(given, ""), "--queues"))
		}
		return qs, nil
	}
}

// EnvWebhookAllow names the webhook allow-list of work and flush when
// --webhook-allow is not given.
const EnvWebhookAllow = "QUEUETY_WEBHOOK_ALLOW"

// webhookAllowFlag declares --webhook-allow and returns a function that
// reads it (or EnvWebhookAllow), checks its entries and returns the
// worker option.
func webhookAllowFlag(fs *flag.FlagSet) func() (worker.Option, error) {
	list := fs.String("webhook-allow", "", "comma-separated IP addresses, CIDR prefixes and host `names` webhook POSTs may reach although they are loopback, private or otherwise internal (default $"+EnvWebhookAllow+")")
	return func() (worker.Option, error) {
		given, source := *list, "--webhook-allow"
		if !flagGiven(fs, "webhook-allow") {
			given, source = os.Getenv(EnvWebhookAllow), EnvWebhookAllow
		}
		entries := splitList(given)
		if _, err := egress.NewPolicy(entries); err != nil {
			return nil, Usagef("%s: %s", source, strings.TrimPrefix(err.Error(), "egress: "))
		}
		return worker.Webhooks(worker.WebhookOptions{Allow: entries}), nil
	}
}

// flagGiven reports whether the command line set flag name.
// EnvMaxExecutionTime names the environment variable that sets work's
// --max-execution-time when the flag is not given, in seconds: Queuety's
// constant of that name.
const EnvMaxExecutionTime = "QUEUETY_MAX_EXECUTION_TIME"

// envMaxExecutionTime reads $QUEUETY_MAX_EXECUTION_TIME (0 when unset).
func envMaxExecutionTime() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(EnvMaxExecutionTime))
	if v == "" {
		return 0, nil
	}
	d, err := parseDuration(v)
	if err != nil || d < 0 {
		return 0, Usagef("$%s: want whole seconds, got %q", EnvMaxExecutionTime, v)
	}
	return d, nil
}

// scaleOptions checks work's adaptive-concurrency flags and returns the
// worker options they make (none without --max-workers).
func scaleOptions(fs *flag.FlagSet, minW, maxW int, interval, grace time.Duration) ([]worker.Option, error) {
	given := flagGiven(fs, "max-workers")
	switch {
	case !given && flagGiven(fs, "min-workers"):
		return nil, Usagef("--min-workers needs --max-workers")
	case !given:
		return nil, nil
	case flagGiven(fs, "concurrency"):
		return nil, Usagef("--max-workers replaces --concurrency: give one of them")
	case maxW < 1:
		return nil, Usagef("--max-workers must be at least 1, got %d", maxW)
	case !flagGiven(fs, "min-workers"):
		minW = 1
	}
	switch {
	case minW < 1 || minW > maxW:
		return nil, Usagef("--min-workers must be between 1 and --max-workers (%d), got %d", maxW, minW)
	case interval <= 0:
		return nil, Usagef("--scale-interval must be positive, got %s", interval)
	case grace < 0:
		return nil, Usagef("--scale-idle-grace must not be negative, got %s", grace)
	}
	return []worker.Option{worker.AdaptiveConcurrency(minW, maxW), worker.ScaleInterval(interval), worker.ScaleIdleGrace(grace)}, nil
}

// cleanStop is err, or nil when err says only that a signal stopped the
// run: ctx is done and no handler was abandoned.
func cleanStop(ctx context.Context, err error) error {
	var abandoned *worker.ShutdownError
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) && !errors.As(err, &abandoned) {
		return nil
	}
	return err
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// flushBudget is flush's time budget when --max-time is not given: in
// effect, none.
const flushBudget = 100 * 365 * 24 * time.Hour

func flushCommand() *Command {
	return &Command{
		Name:    "flush",
		Summary: "process every due job of the queues, then exit",
		Help: `Claims and runs due jobs and workflow steps until none is due for this
binary's handlers, then waits for the running handlers and exits, as wp
queuety flush does. Like work --once it first runs the sweeps and fires
due schedules (wp queuety flush does not), but it has no time budget
unless --max-time is given. A job of a handler this binary lacks is not
run (and never buried for it); see discover.`,
		Examples: []string{
			Program + " flush",
			Program + " flush --queue critical,default,low --json",
		},
		LogLevel: "info",
		Setup: func(fs *flag.FlagSet) RunFunc {
			queues := queuesFlags(fs)
			concurrency := fs.Int("concurrency", worker.ConcurrencyDefault, "handlers to run at once")
			maxTime := durationFlag(fs, "max-time", 0, "stop claiming after this `duration` (default: no limit)")
			allow := webhookAllowFlag(fs)
			return func(e *Env, _ []string) error {
				qs, err := queues()
				if err != nil {
					return err
				}
				hooks, err := allow()
				if err != nil {
					return err
				}
				switch {
				case *concurrency < 1:
					return Usagef("--concurrency must be at least 1, got %d", *concurrency)
				case *maxTime < 0:
					return Usagef("--max-time must not be negative, got %s", *maxTime)
				}
				budget := *maxTime
				if budget == 0 {
					budget = flushBudget
				}
				ctx, stop := signal.NotifyContext(e.Ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				e.Ctx = ctx
				c, err := e.Open(e.observer(nil))
				if err != nil {
					return err
				}
				defer c.Close()
				w := worker.New(c, append([]worker.Option{worker.WithRegistry(e.Registry), worker.Queues(qs...), worker.Concurrency(*concurrency),
					worker.WithLogger(e.Logger()), hooks}, e.workerOptions()...)...)
				warnNoHandlers(e, c, qs)
				start := time.Now()
				st, err := w.RunOnce(ctx, budget)
				took := time.Since(start)
				if perr := printResult(e, map[string]any{
					"queues": qs, "processed": st.Claimed - st.HandedBack, "succeeded": st.Succeeded, "failed": st.Failed,
					"handed_back": st.HandedBack, "duration_ms": took.Milliseconds(), "interrupted": ctx.Err() != nil,
				}, "Flushed %s from %s (succeeded %d, failed %d); %s.\n", plural(st.Claimed-st.HandedBack, "job"),
					strings.Join(qs, ","), st.Succeeded, st.Failed, took.Round(time.Millisecond)); perr != nil {
					return perr
				}
				err = cleanStop(ctx, err)
				if err != nil {
					return fmt.Errorf("flush: %w", err)
				}
				return nil
			}
		},
	}
}
