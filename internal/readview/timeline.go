package readview

import (
	"sort"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// orderTimeline puts a workflow's timeline in time order. The events and
// the log rows come from two tables with their own ids and with times in
// whole seconds, so a fast workflow has many rows in the same second. Each
// table keeps its own order (time, then id: the order the rows were
// written), and the two are merged by time. Within one second the merge
// keeps each job attempt's rows together and in their natural order: its
// start (step_started, then the started log row) before its end (the
// completion, failure or wait event, then the log row), and an attempt
// whose rows have begun is finished before the next one begins.
// workflow_started comes first in its second; other rows without a job
// (workflow_completed, workflow_waiting) belong to the attempt written
// just before them.
func orderTimeline(entries []timelineRow) []queuetytype.TimelineEntry {
	var events, logs []timelineRow
	for _, te := range entries {
		if te.Source == "event" {
			events = append(events, te)
		} else {
			logs = append(logs, te)
		}
	}
	for _, s := range [][]timelineRow{events, logs} {
		sort.SliceStable(s, func(a, b int) bool {
			if !s[a].at.Equal(s[b].at) {
				return s[a].at.Before(s[b].at)
			}
			return s[a].id < s[b].id
		})
	}
	eventUnits, logUnits := attemptUnits(events), attemptUnits(logs)
	opened := map[attemptUnit]int{}
	out := make([]queuetytype.TimelineEntry, 0, len(entries))
	i, j := 0, 0
	for i < len(events) || j < len(logs) {
		takeLog := i == len(events)
		if i < len(events) && j < len(logs) {
			ev, lg := events[i], logs[j]
			ue, ul := eventUnits[i], logUnits[j]
			oe, openE := opened[ue]
			ol, openL := opened[ul]
			switch {
			case !ev.at.Equal(lg.at):
				takeLog = lg.at.Before(ev.at)
			case lg.Event == string(driver.LogWorkflowStarted):
				takeLog = true
			case ue == ul:
				takeLog = timelinePhase(lg.TimelineEntry) < timelinePhase(ev.TimelineEntry)
			case openE && openL:
				takeLog = ol < oe
			default:
				takeLog = openL
			}
		}
		te, u := timelineRow{}, attemptUnit{}
		if takeLog {
			te, u = logs[j], logUnits[j]
			j++
		} else {
			te, u = events[i], eventUnits[i]
			i++
		}
		if _, ok := opened[u]; !ok {
			opened[u] = len(opened)
		}
		out = append(out, te.TimelineEntry)
	}
	return out
}

// timelineRow is a timeline entry with the row id and time it is ordered
// by.
type timelineRow struct {
	queuetytype.TimelineEntry
	id int64
	at time.Time
}

// attemptUnit is the job attempt a timeline row belongs to.
type attemptUnit struct {
	job     int64
	attempt int
}

// attemptUnits returns the attempt each row of one source belongs to. A
// row without an attempt (a step's completed log row) has its job's
// latest attempt in that source; a row without a job has the attempt of
// the row before it.
func attemptUnits(rows []timelineRow) []attemptUnit {
	units := make([]attemptUnit, len(rows))
	latest := map[int64]int{}
	var prev attemptUnit
	for n, te := range rows {
		u := prev
		if te.JobID != 0 {
			a, ok := latest[te.JobID]
			if te.Attempt != nil {
				a, ok = *te.Attempt, true
			}
			if ok {
				latest[te.JobID] = a
			}
			u = attemptUnit{job: te.JobID, attempt: a}
		}
		units[n], prev = u, u
	}
	return units
}

// timelinePhase is 0 for a row that starts an attempt and 1 for the rest.
func timelinePhase(te queuetytype.TimelineEntry) int {
	if te.Event == string(driver.EventStepStarted) || te.Event == string(driver.LogStarted) {
		return 0
	}
	return 1
}
