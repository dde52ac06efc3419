package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func workerCommand() *Command {
	return &Command{
		Name:    "worker",
		Summary: "show the running workers (the worker registry)",
		Help: `Every worker (work, work --once, flush, or an application's worker.Run)
registers in the worker registry while it runs: its host, process id,
version, queues, handlers and concurrency, and the jobs it runs, renewed at
every lease interval (3 s by default). A worker that stops cleanly removes
its row; one that was killed or lost the database shows as gone after ` + strconv.Itoa(queuetytype.GoneAfter) + `
missed renewals, and a running worker removes its row an hour later.`,
		Examples: []string{Program + " worker list", Program + " worker list --json"},
		Sub:      []*Command{workerListCommand()},
	}
}

func workerListCommand() *Command {
	return &Command{
		Name:     "list",
		Summary:  "list the registered workers, live and gone",
		Examples: []string{Program + " worker list", Program + " worker list --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onStore(func(e *Env, c *queuety.Client) error {
				workers, err := c.Workers(e.Ctx)
				if err != nil {
					return err
				}
				return printList(e, workers, workerView, "No workers registered.",
					"ID\tHOST\tPID\tVERSION\tSTATUS\tQUEUES\tCONCURRENCY\tJOBS\tSTARTED AT\tLAST HEARTBEAT",
					func(w io.Writer, r *queuetytype.Worker) {
						fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, r.Host, r.PID, dash(r.Version), workerStatus(r),
							dash(strings.Join(r.Queues, ",")), r.Concurrency, dash(jobIDList(r.Jobs, 10)), dash(ts(r.StartedAt)), dash(ts(r.LastHeartbeat)))
					})
			})
		},
	}
}

// workerJSON is a registered worker in JSON output.
type workerJSON struct {
	ID                       string   `json:"id"`
	Host                     string   `json:"host"`
	PID                      int      `json:"pid"`
	Version                  string   `json:"version"`
	Status                   string   `json:"status"` // live or gone
	Queues                   []string `json:"queues"`
	Handlers                 []string `json:"handlers"`
	Concurrency              int      `json:"concurrency"`
	Jobs                     []int64  `json:"jobs"`
	StartedAt                string   `json:"started_at"`
	LastHeartbeatAt          string   `json:"last_heartbeat_at"`
	HeartbeatIntervalSeconds float64  `json:"heartbeat_interval_seconds"`
}

func workerView(w *queuetytype.Worker) workerJSON {
	return workerJSON{
		ID: w.ID, Host: w.Host, PID: w.PID, Version: w.Version, Status: workerStatus(w), Queues: nonNil(w.Queues),
		Handlers: nonNil(w.Handlers), Concurrency: w.Concurrency, Jobs: nonNil(w.Jobs), StartedAt: ts(w.StartedAt),
		LastHeartbeatAt: ts(w.LastHeartbeat), HeartbeatIntervalSeconds: w.HeartbeatInterval.Seconds(),
	}
}

func workerStatus(w *queuetytype.Worker) string {
	if w.Gone {
		return "gone"
	}
	return "live"
}

// jobIDList is ids as "7,9,12", the first max of them and how many more.
func jobIDList(ids []int64, max int) string {
	var b strings.Builder
	for i, id := range ids {
		if i == max {
			fmt.Fprintf(&b, " (+%d more)", len(ids)-max)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}
