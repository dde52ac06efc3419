//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one row of the report.
type result struct {
	Name       string
	Workers    int
	Dispatched int // units of work: jobs, workflow steps, deadline callbacks, hung handlers
	Lost       int // dispatched units never completed
	Phantom    int // units completed without any recorded run
	DupNoCrash int // units that ran twice although no SIGKILL hit the earlier run's process
	DupCrash   int // units that ran again because the process of the earlier run was SIGKILLed
	Kills      int // SIGKILLs of workers, or kills of the server in the mariadb scenario
	Crashes    int // worker or sweeper processes that exited without being told to
	Hung       int // processes that did not exit within the shutdown timeout + the bound after SIGTERM
	Recovery   []time.Duration
	Took       time.Duration
	Notes      []string
	NoLost     bool // the lost and duplicate columns do not apply
}

func (r *result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// run is one row of chaos_runs: one attempt that reached its handler.
type run struct {
	jobID      int64
	attempt    int
	attemptID  string
	workflowID int64
	stepIndex  int
	tag        string
	pid        int
	startedAt  time.Time
}

// thenTag is the tag, and the unit, of a run of the then callback of
// batch id.
func thenTag(id int64) string { return fmt.Sprintf("cb:then:%d", id) }

// lateTag is the tag, and the unit, of a run of the deadline callback of
// the workflow whose state has key.
func lateTag(key string) string { return "cb:late:" + key }

// itemTag is the tag of a for_each branch's run: the item's index.
func itemTag(index int) string { return fmt.Sprintf("item:%d", index) }

// branchUnit is the unit of one for_each branch: the step and the item.
func branchUnit(workflowID int64, step, index int) string {
	return fmt.Sprintf("wf:%d:%d:%s", workflowID, step, itemTag(index))
}

func (r run) unit() string {
	var index int
	switch {
	case r.workflowID != 0 && r.stepIndex >= 0 && scanItemTag(r.tag, &index):
		return branchUnit(r.workflowID, r.stepIndex, index)
	case strings.HasPrefix(r.tag, "cb:"):
		return r.tag
	case r.tag != "" && r.tag != "hang":
		return "dl:" + r.tag
	case r.workflowID != 0 && r.stepIndex >= 0:
		return fmt.Sprintf("wf:%d:%d", r.workflowID, r.stepIndex)
	default:
		return fmt.Sprintf("job:%d", r.jobID)
	}
}

// scanItemTag reads an itemTag into index.
func scanItemTag(tag string, index *int) bool {
	if !strings.HasPrefix(tag, "item:") {
		return false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(tag, "item:"))
	*index = n
	return err == nil
}

const runsTable = `CREATE TABLE IF NOT EXISTS chaos_runs (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	job_id BIGINT NOT NULL,
	attempt INT NOT NULL,
	attempt_id VARCHAR(100) NOT NULL,
	workflow_id BIGINT NOT NULL DEFAULT 0,
	step_index INT NOT NULL DEFAULT -1,
	handler VARCHAR(100) NOT NULL,
	tag VARCHAR(100) NOT NULL DEFAULT '',
	pid INT NOT NULL,
	started_at DATETIME(6) NOT NULL,
	UNIQUE KEY uniq_attempt (attempt_id),
	KEY idx_job (job_id)
) ENGINE=InnoDB`

func loadRuns(ctx context.Context, db *sql.DB) ([]run, error) {
	rows, err := db.QueryContext(ctx, `SELECT job_id, attempt, attempt_id, workflow_id, step_index, tag, pid, started_at FROM chaos_runs ORDER BY started_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []run
	for rows.Next() {
		var r run
		if err := rows.Scan(&r.jobID, &r.attempt, &r.attemptID, &r.workflowID, &r.stepIndex, &r.tag, &r.pid, &r.startedAt); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// jobUnit is one queuety job row, reduced to the unit of work it serves.
type jobUnit struct {
	id     int64
	unit   string
	status string
}

// loadJobUnits reads every job row as the unit it serves. A for_each
// branch (a workflow job whose payload carries __for_each.item_index) is
// its own unit, wf:<id>:<step>:item:<index>. The engine's internal jobs
// (handlers named __queuety_*: for_each placeholders and the like) run no
// handler and are no unit.
func loadJobUnits(ctx context.Context, db *sql.DB, prefix string) ([]jobUnit, error) {
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT id, handler, status, COALESCE(workflow_id, 0), COALESCE(step_index, -1),
		CASE WHEN handler IN (?, ?, ?) THEN payload ELSE '' END,
		CASE WHEN workflow_id IS NOT NULL THEN JSON_VALUE(payload, '$.__for_each.item_index') END
		FROM %squeuety_jobs`, prefix), hDeadline, hThen, hLate)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []jobUnit
	for rows.Next() {
		var (
			j                jobUnit
			handler, payload string
			wf               int64
			step             int
			item             sql.NullInt64
		)
		if err := rows.Scan(&j.id, &handler, &j.status, &wf, &step, &payload, &item); err != nil {
			return nil, err
		}
		switch {
		case strings.HasPrefix(handler, internalPrefix):
			continue
		case handler == hDeadline || handler == hThen || handler == hLate:
			var p struct {
				Key     string `json:"key"`
				BatchID int64  `json:"batch_id"`
			}
			_ = json.Unmarshal([]byte(payload), &p)
			switch handler {
			case hThen:
				j.unit = thenTag(p.BatchID)
			case hLate:
				j.unit = lateTag(p.Key)
			default:
				j.unit = "dl:" + p.Key
			}
		case wf != 0 && step >= 0 && item.Valid:
			j.unit = branchUnit(wf, step, int(item.Int64))
		case wf != 0 && step >= 0:
			j.unit = fmt.Sprintf("wf:%d:%d", wf, step)
		default:
			j.unit = fmt.Sprintf("job:%d", j.id)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// internalPrefix begins the names of the engine's internal handlers.
const internalPrefix = "__queuety_"

// jobAttempt names one attempt of a job.
type jobAttempt struct {
	job     int64
	attempt int
}

// loadRetried returns when each retried attempt was handed back to the
// queue (the 'retried' log row; stale recovery writes one), at the log's
// one-second resolution, and how many attempts failed in their handler.
func loadRetried(ctx context.Context, db *sql.DB, prefix string) (map[jobAttempt]time.Time, int, error) {
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT job_id, COALESCE(attempt, 0), event, created_at FROM %squeuety_logs
		WHERE event IN ('retried', 'failed') AND job_id IS NOT NULL`, prefix))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := map[jobAttempt]time.Time{}
	failed := 0
	for rows.Next() {
		var (
			k     jobAttempt
			event string
			at    time.Time
		)
		if err := rows.Scan(&k.job, &k.attempt, &event, &at); err != nil {
			return nil, 0, err
		}
		if event == "failed" {
			failed++
			continue
		}
		out[k] = at
	}
	return out, failed, rows.Err()
}

// analysis is what the runs and the job rows say about the expected units.
type analysis struct {
	lost, phantom        []string
	dupNoCrash, dupCrash []string
	recovery             []time.Duration // per SIGKILL that left runs behind: until they ran again
	returned             []time.Duration // the same: until stale recovery handed them back (1 s resolution)
	orphaned             int             // runs left behind by SIGKILLs
	quietKills           int             // SIGKILLs that left no recorded run behind
}

// analyze counts lost and duplicated units. A unit ran twice after a
// crash when every earlier run's process was SIGKILLed after that run
// began and before the next one began; otherwise it ran twice without a
// crash. A SIGKILL's recovery time is the time from the kill to the last
// of its interrupted runs being started again elsewhere.
func analyze(expected []string, jobs []jobUnit, runs []run, kills map[int]time.Time, retried map[jobAttempt]time.Time) analysis {
	var a analysis
	completed := map[string]bool{}
	for _, j := range jobs {
		if j.status == "completed" {
			completed[j.unit] = true
		}
	}
	byUnit := map[string][]run{}
	for _, r := range runs {
		byUnit[r.unit()] = append(byUnit[r.unit()], r)
	}
	for _, u := range expected {
		switch {
		case !completed[u]:
			a.lost = append(a.lost, u)
		case len(byUnit[u]) == 0:
			a.phantom = append(a.phantom, u)
		}
	}
	perKill, perKillReturned := map[int]time.Duration{}, map[int]time.Duration{}
	for u, rs := range byUnit {
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(x, y run) int { return x.startedAt.Compare(y.startedAt) })
		explained := true
		for i := 0; i < len(rs)-1; i++ {
			at, killed := kills[rs[i].pid]
			if killed && at.After(rs[i].startedAt) && !at.After(rs[i+1].startedAt) {
				a.orphaned++
				if d := rs[i+1].startedAt.Sub(at); d > perKill[rs[i].pid] {
					perKill[rs[i].pid] = d
				}
				if back, ok := retried[jobAttempt{rs[i].jobID, rs[i].attempt}]; ok {
					if d := back.Sub(at); d > perKillReturned[rs[i].pid] {
						perKillReturned[rs[i].pid] = d
					}
				}
				continue
			}
			explained = false
		}
		desc := describeRuns(u, rs, kills)
		if explained {
			a.dupCrash = append(a.dupCrash, desc)
		} else {
			a.dupNoCrash = append(a.dupNoCrash, desc)
		}
	}
	for pid := range kills {
		if d, ok := perKill[pid]; ok {
			a.recovery = append(a.recovery, d)
			if d, ok := perKillReturned[pid]; ok {
				a.returned = append(a.returned, d)
			}
		} else {
			a.quietKills++
		}
	}
	slices.Sort(a.recovery)
	slices.Sort(a.dupNoCrash)
	slices.Sort(a.lost)
	return a
}

func describeRuns(unit string, rs []run, kills map[int]time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", unit)
	for _, r := range rs {
		fmt.Fprintf(&b, " [job %d attempt %d (%s) pid %d at %s", r.jobID, r.attempt, r.attemptID, r.pid, r.startedAt.Format("15:04:05.000000"))
		if at, ok := kills[r.pid]; ok {
			fmt.Fprintf(&b, ", pid SIGKILLed at %s", at.UTC().Format("15:04:05.000000"))
		}
		b.WriteString("]")
	}
	return b.String()
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func first[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// printReport writes the table and each scenario's notes.
func printReport(w io.Writer, s scale, results []*result, took time.Duration) {
	fmt.Fprintf(w, "\nqueuety chaos report (%s)\n", s)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tworkers\tdispatched\tlost\tdone w/o run\ttwice, no crash\ttwice after crash\tkills\tcrashes\thung\trecovery median s\trecovery max s\tseconds\t")
	var tot result
	for _, r := range results {
		na := func(n int) string {
			if r.NoLost {
				return "-"
			}
			return fmt.Sprint(n)
		}
		rec := func(d time.Duration) string {
			if len(r.Recovery) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", d.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%.1f\t\n", r.Name, r.Workers, r.Dispatched,
			na(r.Lost), na(r.Phantom), na(r.DupNoCrash), na(r.DupCrash), r.Kills, r.Crashes, r.Hung,
			rec(median(r.Recovery)), rec(slices.Max(append([]time.Duration{0}, r.Recovery...))), r.Took.Seconds())
		tot.Dispatched += r.Dispatched
		tot.Lost += r.Lost
		tot.Phantom += r.Phantom
		tot.DupNoCrash += r.DupNoCrash
		tot.DupCrash += r.DupCrash
		tot.Kills += r.Kills
		tot.Crashes += r.Crashes
		tot.Hung += r.Hung
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\t\t%.1f\t\n", tot.Dispatched, tot.Lost, tot.Phantom,
		tot.DupNoCrash, tot.DupCrash, tot.Kills, tot.Crashes, tot.Hung, took.Seconds())
	tw.Flush()
	for _, r := range results {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, n)
		}
	}
}

// logSummary counts the warnings and errors in the child processes' logs
// by message, most frequent first.
func logSummary(paths []string) []string {
	counts := map[string]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			level := ""
			switch {
			case strings.Contains(line, "level=WARN"):
				level = "WARN"
			case strings.Contains(line, "level=ERROR"):
				level = "ERROR"
			case strings.HasPrefix(line, "panic:"), strings.HasPrefix(line, "fatal error:"):
				counts[line]++
				continue
			default:
				continue
			}
			msg := line
			if i := strings.Index(line, "msg="); i >= 0 {
				msg = line[i+4:]
				if strings.HasPrefix(msg, `"`) {
					if j := strings.Index(msg[1:], `"`); j >= 0 {
						msg = msg[:j+2]
					}
				} else if j := strings.IndexByte(msg, ' '); j >= 0 {
					msg = msg[:j]
				}
			}
			counts[level+" "+msg]++
		}
	}
	msgs := make([]string, 0, len(counts))
	for m := range counts {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("%6d× %s", counts[m], m)
	}
	return out
}
