package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// queueRow is one queue in status and queue list.
type queueRow struct {
	Queue      string `json:"queue"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Completed  int64  `json:"completed"`
	Failed     int64  `json:"failed"`
	Buried     int64  `json:"buried"`
	Total      int64  `json:"total"`
	Paused     bool   `json:"paused"`
	PausedAt   string `json:"paused_at,omitempty"`
}

// pausedCell is the PAUSED cell of a status row.
func (q *queueRow) pausedCell() string {
	if !q.Paused {
		return ""
	}
	if q.PausedAt != "" {
		return "paused since " + q.PausedAt
	}
	return "paused"
}

// queueRows are the queues' summaries in the CLI's shape.
func queueRows(ctx context.Context, c *queuety.Client) ([]*queueRow, error) {
	sums, err := c.QueueSummaries(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*queueRow, len(sums))
	for i, q := range sums {
		out[i] = &queueRow{Queue: q.Queue, Pending: q.Pending, Processing: q.Processing, Completed: q.Completed,
			Failed: q.Failed, Buried: q.Buried, Total: q.Total, Paused: q.Paused}
		if q.Paused {
			out[i].PausedAt = ts(q.PausedAt)
		}
	}
	return out, nil
}

// workflowCount is the number of workflows with one status.
type workflowCount struct {
	Status queuetytype.WorkflowStatus `json:"status"`
	Count  int64                      `json:"count"`
}

func workflowCounts(ctx context.Context, c *queuety.Client) ([]workflowCount, error) {
	counts, err := c.WorkflowCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]workflowCount, 0, len(workflowStatuses))
	for _, s := range workflowStatuses {
		out = append(out, workflowCount{Status: s, Count: counts[s]})
	}
	return out, nil
}

func statusCommand() *Command {
	return &Command{
		Name:    "status",
		Summary: "show job counts per queue and status, paused queues and workflow counts",
		Help: `With --queue, only that queue's job counts are shown (zeros when it has no
jobs), and no workflow counts: workflows are not stored per queue.`,
		Examples: []string{
			Program + " status",
			Program + " status --json",
			Program + " status --queue emails",
			Program + " --wp-config /var/www/html/wp-config.php status",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			only := fs.String("queue", "", "show only this `queue`")
			return onStore(func(e *Env, c *queuety.Client) error {
				queues, err := queueRows(e.Ctx, c)
				if err != nil {
					return err
				}
				info := c.StoreInfo()
				if q := strings.TrimSpace(*only); q != "" {
					return printQueueStatus(e, info, queueRowOf(queues, q))
				}
				wfs, err := workflowCounts(e.Ctx, c)
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, map[string]any{
						"store":     map[string]string{"driver": info.Driver, "server": info.Server, "address": info.Address, "prefix": info.Prefix},
						"queues":    queues,
						"workflows": wfs,
					})
				}
				fmt.Fprintf(e.Stdout, "Store: %s (%s) %s, table prefix %q\n\n", info.Driver, info.Server, info.Address, info.Prefix)
				tw := newTable(e.Stdout)
				fmt.Fprintln(tw, "QUEUE\tPENDING\tPROCESSING\tCOMPLETED\tFAILED\tBURIED\tPAUSED")
				var tot queueRow
				for _, q := range queues {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", q.Queue, q.Pending, q.Processing, q.Completed, q.Failed, q.Buried, q.pausedCell())
					tot.Pending += q.Pending
					tot.Processing += q.Processing
					tot.Completed += q.Completed
					tot.Failed += q.Failed
					tot.Buried += q.Buried
				}
				if len(queues) == 0 {
					fmt.Fprintln(tw, "(no jobs)\t\t\t\t\t\t")
				} else if len(queues) > 1 {
					fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t\n", tot.Pending, tot.Processing, tot.Completed, tot.Failed, tot.Buried)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(e.Stdout)
				tw = newTable(e.Stdout)
				fmt.Fprintln(tw, "WORKFLOWS\tCOUNT")
				for _, w := range wfs {
					fmt.Fprintf(tw, "%s\t%d\n", w.Status, w.Count)
				}
				return tw.Flush()
			})
		},
	}
}

// queueRowOf returns the row of queue q, or an empty one.
func queueRowOf(rows []*queueRow, q string) *queueRow {
	for _, r := range rows {
		if r.Queue == q {
			return r
		}
	}
	return &queueRow{Queue: q}
}

// printQueueStatus prints status --queue: one queue's counts.
func printQueueStatus(e *Env, info driver.StoreInfo, q *queueRow) error {
	if e.Globals.JSON {
		return printJSON(e.Stdout, map[string]any{
			"store":  map[string]string{"driver": info.Driver, "server": info.Server, "address": info.Address, "prefix": info.Prefix},
			"queues": []*queueRow{q},
		})
	}
	fmt.Fprintf(e.Stdout, "Store: %s (%s) %s, table prefix %q\n\n", info.Driver, info.Server, info.Address, info.Prefix)
	tw := newTable(e.Stdout)
	fmt.Fprintln(tw, "QUEUE\tPENDING\tPROCESSING\tCOMPLETED\tFAILED\tBURIED\tPAUSED")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", q.Queue, q.Pending, q.Processing, q.Completed, q.Failed, q.Buried, q.pausedCell())
	return tw.Flush()
}
