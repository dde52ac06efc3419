package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// logEvents are the values of the logs table's event column.
var logEvents = []driver.LogEvent{
	driver.LogStarted, driver.LogCompleted, driver.LogFailed, driver.LogBuried, driver.LogRetried,
	driver.LogWorkflowStarted, driver.LogWorkflowCompleted, driver.LogWorkflowFailed, driver.LogWorkflowPaused,
	driver.LogWorkflowResumed, driver.LogWorkflowCancelled, driver.LogWorkflowRewound, driver.LogWorkflowForked,
	driver.LogWorkflowDeadlineExceeded, driver.LogDebug,
}

// defaultLogWindow is how far back `log list` looks when no filter is
// given (wp queuety log shows the last 24 hours).
const defaultLogWindow = 24 * time.Hour

func logCommand() *Command {
	return &Command{
		Name:    "log",
		Summary: "query and purge the log rows (Queuety's logs table)",
		Examples: []string{
			Program + " log list --job 42",
			Program + " log list --event failed --limit 100",
			Program + " log purge --older-than 30",
		},
		Sub: []*Command{logListCommand(), logPurgeCommand()},
	}
}

// parseSince reads --since: a time (RFC 3339, "2006-01-02 15:04:05",
// "2006-01-02T15:04:05" or "2006-01-02", in UTC unless it names a zone) or
// an age before now ("24h", "7d", "90m").
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if _, err := time.ParseDuration(s); err == nil || strings.HasSuffix(s, "d") {
		if d, err := parseDuration(s); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
	}
	return time.Time{}, Usagef("--since %q: want a UTC time such as '2025-03-01 00:00:00' or 2025-03-01T00:00:00Z, or an age such as 24h or 7d", s)
}

func logListCommand() *Command {
	return &Command{
		Name:    "list",
		Summary: "list log rows: the newest --limit matching rows, oldest first",
		Help: `Filters combine (wp queuety log applies only the first one given). With no
filter at all, rows of the last 24 hours are listed, as wp queuety log does.
--since takes a UTC time or an age before now (24h, 7d).`,
		Examples: []string{
			Program + " log list",
			Program + " log list --job 42",
			Program + " log list --workflow 7 --event workflow_failed --json",
			Program + " log list --handler send_email --since '2025-03-01 00:00:00' --limit 200",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			job := fs.Int64("job", 0, "only rows of this job `id`")
			wf := fs.Int64("workflow", 0, "only rows of this workflow `id`")
			handler := fs.String("handler", "", "only rows of this `handler`")
			event := fs.String("event", "", "only rows of this `event`: "+joinStatuses(logEvents))
			since := fs.String("since", "", "only rows created at or after this `time` (UTC) or age (24h, 7d)")
			limit := fs.Int("limit", 50, "list at most this many rows (the newest)")
			return func(e *Env, _ []string) error {
				if err := checkLimit(*limit); err != nil {
					return err
				}
				if *job < 0 || *wf < 0 {
					return Usagef("--job and --workflow take ids")
				}
				ev := driver.LogEvent(strings.ToLower(strings.TrimSpace(*event)))
				if ev != "" && !slices.Contains(logEvents, ev) {
					return Usagef("--event %q: want one of %s", *event, joinStatuses(logEvents))
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				now := clientseam.Clock(c).Now()
				f := driver.LogFilter{JobID: *job, WorkflowID: *wf, Handler: *handler, Event: ev, Limit: *limit, Newest: true}
				switch {
				case *since != "":
					if f.Since, err = parseSince(*since, now); err != nil {
						return err
					}
				case f.JobID == 0 && f.WorkflowID == 0 && f.Handler == "" && f.Event == "":
					f.Since = now.Add(-defaultLogWindow)
				}
				logs, err := c.Logs(e.Ctx, f)
				if err != nil {
					return err
				}
				slices.Reverse(logs)
				return printList(e, logs, logView, "No log rows match.",
					"ID\tAT\tEVENT\tHANDLER\tJOB\tWORKFLOW\tSTEP\tATTEMPT\tDURATION\tDETAIL",
					func(w io.Writer, l *driver.LogEntry) {
						jobCell := "-"
						if l.JobID != nil {
							jobCell = itoa(*l.JobID)
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, ts(l.CreatedAt), l.Event, cell(l.Handler, 40),
							jobCell, idCell(l.WorkflowID), intPtr(l.StepIndex), intPtr(l.Attempt), durationMS(l.DurationMS),
							cell(detailOrContext(l.ErrorMessage, l.Context), 80))
					})
			}
		},
	}
}

func logPurgeCommand() *Command {
	return purgeCommand(purgeSpec{
		name: "purge", summary: "delete log rows created longer ago than --older-than",
		help: `--older-than takes a number of days, as wp queuety log purge does, or a
duration (12h, 7d). Rows are deleted in batches of 1000. The metrics and
Queuety PHP's rate limits read the log rows of the recent past only.`,
		examples: []string{Program + " log purge --older-than 30", Program + " log purge --older-than 12h --json"},
		noun:     "log row", what: "log rows",
		del: (*queuety.Client).PurgeLogs, key: "created_before", phrase: "created before",
	})
}
