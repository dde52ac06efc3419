package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/schedexpr"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func scheduleCommand() *Command {
	return &Command{
		Name:    "schedule",
		Summary: "list, add and operate recurring job and workflow schedules",
		Help: `Schedules live in Queuety's schedules table, shared with Queuety PHP. Each
firing dispatches a job (or, for workflow schedules, a fresh workflow).
Workers fire the due schedules: a long-running worker at each schedule's
due time, and work --once (cron) when it starts, so cron-driven workers run
schedules too.

Workflow schedules are created from Go code (Client.ScheduleWorkflow) and
are listed as workflow:KEY. remove, enable, disable and run-now take a
schedule id, a handler name or workflow:KEY.`,
		Examples: []string{
			Program + " schedule list",
			Program + ` schedule add cleanup_sessions '{"older_than_days": 30}' --cron '0 3 * * *' --overlap skip`,
			Program + " schedule add sync_feed --every 5m --queue feeds",
			Program + " schedule run-now 3",
			Program + " schedule run",
			Program + " schedule remove cleanup_sessions",
			Program + " schedule disable workflow:nightly_report",
		},
		Sub: []*Command{
			scheduleListCommand(),
			scheduleAddCommand(),
			scheduleRemoveCommand(),
			scheduleEnableCommand(true),
			scheduleEnableCommand(false),
			scheduleRunNowCommand(),
			scheduleRunCommand(),
		},
	}
}

// scheduleJSON is a schedule row as the CLI prints it with --json.
type scheduleJSON struct {
	ID          int64                `json:"id"`
	Handler     string               `json:"handler"` // as stored
	Kind        string               `json:"kind"`    // job or workflow
	WorkflowKey string               `json:"workflow_key,omitempty"`
	Type        driver.ScheduleType  `json:"type"`
	Expression  string               `json:"expression"`
	Queue       string               `json:"queue"`
	Overlap     driver.OverlapPolicy `json:"overlap"`
	CatchUp     driver.CatchUpPolicy `json:"catch_up"`
	Enabled     bool                 `json:"enabled"`
	LastRun     string               `json:"last_run,omitempty"`
	NextRun     string               `json:"next_run,omitempty"`
	LastRunID   int64                `json:"last_run_id,omitempty"` // the job or workflow the latest firing dispatched
	PendingRun  string               `json:"pending_run,omitempty"` // a buffered firing's slot
	CreatedAt   string               `json:"created_at,omitempty"`
	Payload     json.RawMessage      `json:"payload"`
}

func scheduleView(s *driver.Schedule) scheduleJSON {
	key, _ := s.WorkflowKey()
	return scheduleJSON{
		ID: s.ID, Handler: s.Handler, Kind: scheduleKind(s), WorkflowKey: key, Type: s.ExpressionType,
		Expression: s.Expression, Queue: s.Queue, Overlap: s.Overlap, CatchUp: s.EffectiveCatchUp(), Enabled: s.Enabled,
		LastRun: ts(s.LastRun), NextRun: ts(s.NextRun), LastRunID: s.LastRunRef, PendingRun: ts(s.PendingRun),
		CreatedAt: ts(s.CreatedAt), Payload: rawJSON(s.Payload),
	}
}

func scheduleKind(s *driver.Schedule) string {
	if _, ok := s.WorkflowKey(); ok || s.IsWorkflow() {
		return "workflow"
	}
	return "job"
}

// scheduleTarget is the HANDLER column: the handler, or workflow:KEY.
func scheduleTarget(s *driver.Schedule) string {
	if key, ok := s.WorkflowKey(); ok {
		return "workflow:" + key
	}
	return s.Handler
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func scheduleListCommand() *Command {
	return &Command{
		Name:    "list",
		Summary: "list the schedules with their policies, last run and next run (UTC)",
		Examples: []string{
			Program + " schedule list",
			Program + " schedule list --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onStore(func(e *Env, c *queuety.Client) error {
				list, err := c.Schedules(e.Ctx)
				if err != nil {
					return err
				}
				return printList(e, list, scheduleView, "No schedules.",
					"ID\tHANDLER\tTYPE\tEXPRESSION\tQUEUE\tOVERLAP\tCATCH-UP\tENABLED\tLAST RUN\tNEXT RUN",
					func(w io.Writer, s *driver.Schedule) {
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, cell(scheduleTarget(s), 60),
							dash(string(s.ExpressionType)), cell(s.Expression, 40), dash(s.Queue), dash(string(s.Overlap)),
							s.EffectiveCatchUp(), yesNo(s.Enabled), dash(ts(s.LastRun)), dash(ts(s.NextRun)))
					})
			})
		},
	}
}

// parseOverlap reads --overlap.
func parseOverlap(s string) (driver.OverlapPolicy, error) {
	p := driver.OverlapPolicy(strings.ToLower(strings.TrimSpace(s)))
	switch p {
	case driver.OverlapAllow, driver.OverlapSkip, driver.OverlapBuffer:
		return p, nil
	}
	return "", Usagef("--overlap %q: want allow, skip or buffer", s)
}

// parseCatchUp reads --catch-up.
func parseCatchUp(s string) (driver.CatchUpPolicy, error) {
	p := driver.CatchUpPolicy(strings.ToLower(strings.TrimSpace(s)))
	switch p {
	case driver.CatchUpOnce, driver.CatchUpAll, driver.CatchUpNone:
		return p, nil
	}
	return "", Usagef("--catch-up %q: want once, all or none", s)
}

// exprProblem turns an expression parser error into the reason alone.
func exprProblem(err error) string {
	return strings.TrimPrefix(err.Error(), "schedexpr: ")
}

func scheduleAddCommand() *Command {
	return &Command{
		Name:    "add",
		Summary: "add a recurring job schedule for a handler, or update the handler's schedule, and print its id",
		Args:    "HANDLER [JSON]",
		Help: `JSON is the payload of every dispatched job: a JSON object (default {}),
given as the second argument or with --payload. Give exactly one of --cron, --every and --interval. Schedules fire in UTC,
or in the zone of a CRON_TZ= prefix: --cron 'CRON_TZ=Europe/Berlin 0 9 * * *'.
Expressions are stored in the form Queuety PHP reads too: cron
descriptors as five fields (@daily is '0 0 * * *'), '@every 90s' and Go
durations as '90 seconds'.

A handler has at most one schedule: adding a handler that already has one
updates it in place (same id) with the arguments and flags given, defaults
included. Its enabled flag is kept unless --disabled is given (switch it
back on with 'schedule enable'), and its next run is kept unless the
expression changed.

Under --overlap skip or buffer, a firing while the previous job is still
pending or processing is dropped (skip) or held until that job ends
(buffer, at most one waiting). --catch-up says what happens when a tick
finds several slots due (after an outage, or while no worker ran): once
(fire once for them), all (fire each, up to 100 per tick, the rest at the
next ticks) or none (fire none of them; continue with the next slot).
Slots merged or skipped are logged by the worker and counted in
queuety_schedule_slots_missed_total. Running workers see a schedule added
here within 2 s.`,
		Examples: []string{
			Program + ` schedule add cleanup_sessions '{"older_than_days": 30}' --cron '0 3 * * *'`,
			Program + " schedule add sync_feed --every 5m --queue feeds --overlap skip",
			Program + ` schedule add 'App\Jobs\Digest' --interval '1 hour' --catch-up none --disabled --json`,
			Program + " schedule add report --cron @daily",
		},
		MinArgs: 1, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			cron := fs.String("cron", "", "fire on a 5-field cron `expression` ('*/5 * * * *') or a descriptor (@hourly, @daily, '@every 90s'), in UTC")
			every := &everyValue{}
			fs.Var(every, "every", "fire every `interval`: a duration (at least 1s; 30s, 5m, 2h, 1d; stored in whole seconds) or a\nQueuety interval string ('1 hour', '30 minutes'), as wp queuety schedule add --every takes it")
			payloadFlag := fs.String("payload", "", "the payload as a `JSON` object, instead of the second argument")
			interval := fs.String("interval", "", "fire on a Queuety interval `string` ('15 minutes', '1 hour', '3600 seconds')")
			queue := fs.String("queue", queuetytype.DefaultQueue, "`name` of the queue the jobs are put on")
			overlap := fs.String("overlap", string(driver.OverlapAllow), "`policy` while the previous job is active: allow, skip or buffer")
			catchUp := fs.String("catch-up", string(driver.CatchUpOnce), "`policy` for firings missed while no worker ran: once, all or none")
			disabled := fs.Bool("disabled", false, "save the schedule disabled (enable it later with 'schedule enable')")
			return func(e *Env, args []string) error {
				handler, payload, err := handlerArgs(args)
				if err != nil {
					return err
				}
				if *payloadFlag != "" {
					if len(args) > 1 {
						return Usagef("give the payload once: as the second argument or with --payload")
					}
					if payload, err = parseJSONObject("--payload", *payloadFlag); err != nil {
						return err
					}
				}
				var given []string
				fs.Visit(func(f *flag.Flag) {
					if f.Name == "cron" || f.Name == "every" || f.Name == "interval" {
						given = append(given, "--"+f.Name)
					}
				})
				switch len(given) {
				case 0:
					return Usagef("no expression: give one of --cron, --every or --interval")
				case 1:
				default:
					return Usagef("give only one of --cron, --every or --interval, not %s", strings.Join(given, " and "))
				}
				if strings.TrimSpace(*queue) == "" {
					return Usagef("--queue is empty")
				}
				ov, err := parseOverlap(*overlap)
				if err != nil {
					return err
				}
				cu, err := parseCatchUp(*catchUp)
				if err != nil {
					return err
				}
				// Check the expression here so the error names the flag; Save
				// checks it again.
				switch given[0] {
				case "--cron":
					if strings.TrimSpace(*cron) == "" {
						return Usagef("--cron is empty")
					}
					if _, err := schedexpr.ParseCron(*cron); err != nil {
						return Usagef("--cron: %s", exprProblem(err))
					}
				case "--every":
					if every.interval == "" && every.d < time.Second {
						return Usagef("--every must be at least 1s, got %s", every.d)
					}
				case "--interval":
					if strings.TrimSpace(*interval) == "" {
						return Usagef("--interval is empty")
					}
					if _, err := schedexpr.ParseInterval(*interval); err != nil {
						return Usagef("--interval: %s", exprProblem(err))
					}
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				b := c.Schedule(handler, payload).OnQueue(*queue).Overlap(ov).CatchUp(cu)
				switch given[0] {
				case "--cron":
					b.Cron(*cron)
				case "--every":
					if every.interval != "" {
						b.Interval(every.interval)
					} else {
						b.Every(every.d)
					}
				default:
					b.Interval(*interval)
				}
				if *disabled {
					b.Disabled()
				}
				id, err := b.Save(e.Ctx)
				if err != nil {
					return err
				}
				return printID(e, id)
			}
		},
	}
}

// scheduleRefHelp describes the SCHEDULE argument every schedule verb
// takes.
const scheduleRefHelp = `SCHEDULE is a schedule id (digits only, as schedule list shows it), a
handler name (as wp queuety schedule remove takes it) or workflow:KEY for a
workflow schedule. --handler reads the argument as a handler name even
when it is all digits.`

// scheduleRef is how the schedule verbs name a schedule: its id, its
// handler, or workflow:KEY.
type scheduleRef struct {
	arg       string
	byHandler *bool // --handler
}

// addScheduleRef adds --handler to a schedule verb's flags.
func addScheduleRef(fs *flag.FlagSet) *scheduleRef {
	return &scheduleRef{byHandler: fs.Bool("handler", false, "read the argument as a handler name, even when it is all digits")}
}

// parse checks the argument without the store: an id must be positive.
func (r *scheduleRef) parse(arg string) error {
	r.arg = strings.TrimSpace(arg)
	if r.arg == "" {
		return Usagef("give a schedule ID or HANDLER")
	}
	if id, err := strconv.ParseInt(r.arg, 10, 64); err == nil && !*r.byHandler && id <= 0 {
		return Usagef("schedule id %q: want a positive integer", r.arg)
	}
	return nil
}

// resolve reads the schedule the argument names.
func (r *scheduleRef) resolve(e *Env, c *queuety.Client) (*driver.Schedule, error) {
	if id, err := strconv.ParseInt(r.arg, 10, 64); err == nil && !*r.byHandler {
		return c.ScheduleByID(e.Ctx, id)
	}
	handler := r.arg
	if key, ok := strings.CutPrefix(r.arg, "workflow:"); ok {
		handler = driver.WorkflowSchedulePrefix + key
	}
	all, err := c.Schedules(e.Ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range all {
		if s.Handler == handler {
			return s, nil
		}
	}
	return nil, fmt.Errorf("schedule %q: %w (schedule list shows the schedules)", r.arg, queuetytype.ErrNotFound)
}

// onSchedule makes the RunFunc of a verb that acts on one schedule.
func onSchedule(ref *scheduleRef, run func(e *Env, c *queuety.Client, s *driver.Schedule) error) RunFunc {
	return func(e *Env, args []string) error {
		if err := ref.parse(args[0]); err != nil {
			return err
		}
		return onStore(func(e *Env, c *queuety.Client) error {
			s, err := ref.resolve(e, c)
			if err != nil {
				return err
			}
			return run(e, c, s)
		})(e, args)
	}
}

func scheduleRemoveCommand() *Command {
	return &Command{
		Name:    "remove",
		Summary: "delete a schedule, by id or by handler (the jobs and workflows it dispatched are kept)",
		Args:    "SCHEDULE",
		Help:    scheduleRefHelp,
		MinArgs: 1,
		MaxArgs: 1,
		Examples: []string{
			Program + " schedule remove 3",
			Program + " schedule remove cleanup_sessions",
			Program + " schedule remove workflow:nightly_report --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			ref := addScheduleRef(fs)
			return onSchedule(ref, func(e *Env, c *queuety.Client, s *driver.Schedule) error {
				if err := c.RemoveSchedule(e.Ctx, s.ID); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": s.ID, "handler": s.Handler, "removed": true},
					"Schedule %d (%s) removed.\n", s.ID, scheduleTarget(s))
			})
		},
	}
}

func scheduleRunCommand() *Command {
	return &Command{
		Name:    "run",
		Summary: "run one scheduler tick: fire every due schedule now",
		Help: `Fires every enabled schedule whose next run has come, exactly as a
worker's scheduler does (each due slot once, even with workers ticking at
the same time; catch-up and overlap policies apply), and prints how many
jobs and workflows it dispatched. To fire one schedule outside its
timetable, use run-now.`,
		Examples: []string{Program + " schedule run", Program + " schedule run --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onStore(func(e *Env, c *queuety.Client) error {
				n, err := deadline.New(c).Schedules(e.Ctx)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"dispatched": n},
					"Scheduler tick complete: dispatched %d jobs and workflows.\n", n)
			})
		},
	}
}

func scheduleEnableCommand(enable bool) *Command {
	name, summary := "disable", "stop a schedule from firing (run-now still fires it)"
	if enable {
		name, summary = "enable", "let a disabled schedule fire again, from its next slot after now"
	}
	return &Command{
		Name:     name,
		Summary:  summary,
		Args:     "SCHEDULE",
		Help:     scheduleRefHelp,
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " schedule " + name + " 3", Program + " schedule " + name + " cleanup_sessions"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			ref := addScheduleRef(fs)
			return onSchedule(ref, func(e *Env, c *queuety.Client, s *driver.Schedule) error {
				id := s.ID
				err := c.SetScheduleEnabled(e.Ctx, id, enable)
				if err != nil {
					return err
				}
				s, err = c.ScheduleByID(e.Ctx, id)
				if err != nil {
					return err
				}
				v := map[string]any{"id": id, "handler": s.Handler, "enabled": s.Enabled, "next_run": ts(s.NextRun)}
				if enable {
					return printResult(e, v, "Schedule %d (%s) enabled; next run %s.\n", id, scheduleTarget(s), dash(ts(s.NextRun)))
				}
				return printResult(e, v, "Schedule %d (%s) disabled.\n", id, scheduleTarget(s))
			})
		},
	}
}

func scheduleRunNowCommand() *Command {
	return &Command{
		Name:    "run-now",
		Summary: "fire a schedule once now, outside its timetable, and print what it dispatched",
		Args:    "SCHEDULE",
		Help: `The schedule's next run is unchanged, and run-now fires disabled schedules
too. The overlap policy applies: under skip or buffer, while the previous
job or workflow is still active, nothing is dispatched (buffer dispatches
the firing at the first schedule tick after that run ends).

` + scheduleRefHelp,
		MinArgs: 1,
		MaxArgs: 1,
		Examples: []string{
			Program + " schedule run-now 3",
			Program + " schedule run-now cleanup_sessions --json",
			Program + " schedule run-now workflow:nightly_report",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			sref := addScheduleRef(fs)
			return onSchedule(sref, func(e *Env, c *queuety.Client, s *driver.Schedule) error {
				id := s.ID
				ref, err := c.RunScheduleNow(e.Ctx, id)
				if err != nil {
					return err
				}
				s, err = c.ScheduleByID(e.Ctx, id)
				if err != nil {
					return err
				}
				kind := scheduleKind(s)
				buffered := ref == 0 && s.Overlap == driver.OverlapBuffer && !s.PendingRun.IsZero()
				if e.Globals.JSON {
					out := map[string]any{"id": id, "kind": kind, "dispatched_id": ref, "held_back": ref == 0, "overlap": s.Overlap}
					if ref == 0 {
						out["buffered"] = buffered
						out["active_run_id"] = s.LastRunRef
					}
					return printJSON(e.Stdout, out)
				}
				if ref != 0 {
					fmt.Fprintf(e.Stdout, "Schedule %d dispatched %s %d.\n", id, kind, ref)
					return nil
				}
				active := "its previous run"
				if s.LastRunRef != 0 {
					active += fmt.Sprintf(" (%s %d)", kind, s.LastRunRef)
				}
				if buffered {
					fmt.Fprintf(e.Stdout, "Schedule %d held back by its overlap policy (buffer): %s is still active; a firing waits and is dispatched when that run ends (at the next tick).\n", id, active)
				} else {
					fmt.Fprintf(e.Stdout, "Schedule %d held back by its overlap policy (%s): %s is still active; nothing was dispatched.\n", id, s.Overlap, active)
				}
				return nil
			})
		},
	}
}

// everyValue is the flag.Value of schedule add --every: a duration
// (parseDuration) or a Queuety interval string ("1 hour").
type everyValue struct {
	d        time.Duration
	interval string // set when the value is an interval string
}

// String implements flag.Value.
func (v *everyValue) String() string {
	if v == nil {
		return ""
	}
	if v.interval != "" {
		return v.interval
	}
	if v.d == 0 {
		return ""
	}
	return v.d.String()
}

// Set implements flag.Value.
func (v *everyValue) Set(s string) error {
	if d, err := parseDuration(s); err == nil {
		v.d, v.interval = d, ""
		return nil
	}
	if _, err := schedexpr.ParseInterval(s); err == nil && strings.TrimSpace(s) != "" {
		v.d, v.interval = 0, strings.TrimSpace(s)
		return nil
	}
	return fmt.Errorf("invalid duration %q (want 30s, 5m, 2h, 1d, or an interval such as '1 hour' or '30 minutes')", s)
}
