package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func metricsCommand() *Command {
	return &Command{
		Name:    "metrics",
		Summary: "show per-handler metrics of the last --minutes, from the log rows",
		Help: `Computed from the logs table as wp queuety metrics computes them: per
handler, the completed and failed (failed plus buried) log rows of the
window, the mean and 95th-percentile duration of the completed ones in
milliseconds, and the error rate failed / (completed + failed). Log rows
without a handler (workflow events) are not counted.`,
		Examples: []string{Program + " metrics", Program + " metrics --minutes 1440 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			minutes := fs.Int("minutes", 60, "the window: the last this many `minutes`")
			return func(e *Env, _ []string) error {
				if *minutes < 1 {
					return Usagef("--minutes must be at least 1, got %d", *minutes)
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				rows, err := c.HandlerMetrics(e.Ctx, time.Duration(*minutes)*time.Minute)
				if err != nil {
					return err
				}
				return printList(e, rows, func(m queuetytype.HandlerMetric) queuetytype.HandlerMetric { return m },
					fmt.Sprintf("No metrics data found for the last %d minutes.", *minutes),
					"HANDLER\tCOMPLETED\tFAILED\tAVG MS\tP95 MS\tERROR RATE",
					func(w io.Writer, m queuetytype.HandlerMetric) {
						fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\n", cell(m.Handler, 60), m.Completed, m.Failed,
							strconv.FormatFloat(m.AvgMS, 'f', -1, 64), strconv.FormatFloat(m.P95MS, 'f', -1, 64),
							strconv.FormatFloat(m.ErrorRate, 'f', -1, 64))
					})
			}
		},
	}
}

// handlerJSON is one registered handler as discover prints it.
type handlerJSON struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// handlerKind names what a registered handler is.
func handlerKind(r *queuety.Registry, name string) string {
	if _, ok := r.Job(name); ok {
		return "job"
	}
	if _, ok := r.Step(name); ok {
		return "step"
	}
	if _, ok := r.ForEach(name); ok {
		return "for_each"
	}
	if _, ok := r.Callback(name); ok {
		return "callback"
	}
	return "unknown"
}

func discoverCommand() *Command {
	return &Command{
		Name:    "discover",
		Summary: "list the handlers this binary has registered (Go's counterpart of handler discovery)",
		Help: `wp queuety discover scans a directory of PHP classes for handlers. Go
handlers are not discovered from files: a program registers them in code
and builds the CLI into itself with cli.Main(registry). discover lists the
handlers so registered (jobs, steps, for_each branches and deadline,
cancel or compensation callbacks), which are the jobs this binary's
'work' claims. The stock queuety-worker has none. It takes no directory,
namespace or --register.`,
		Examples: []string{Program + " discover", Program + " discover --json"},
		MaxArgs:  -1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				if len(args) > 0 {
					return Usagef("discover takes no directory or namespace: Go handlers are registered in code " +
						"(cli.Main(registry)), not discovered from PHP files; it lists the handlers this binary has")
				}
				names := e.Registry.Names()
				rows := make([]handlerJSON, len(names))
				for i, n := range names {
					rows[i] = handlerJSON{Name: n, Kind: handlerKind(e.Registry, n)}
				}
				return printList(e, rows, func(h handlerJSON) handlerJSON { return h },
					"No handlers registered: this binary runs only the engine's internal steps and the sweeps (build the CLI into your program with cli.Main(registry) to add yours).",
					"HANDLER\tKIND",
					func(w io.Writer, h handlerJSON) { fmt.Fprintf(w, "%s\t%s\n", h.Name, h.Kind) })
			}
		},
	}
}
