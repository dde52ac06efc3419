package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/worker"
)

// This file holds the work command's retention flags: the ages of the
// cleaner the worker runs with its sweeps (worker.Retention).

// retainValue is a flag.Value for a retention age: a number of days (as
// wp queuety's --older-than), a duration (12h, 7d), or "forever".
type retainValue struct {
	d   time.Duration // -1: forever
	set bool
}

// String implements flag.Value.
func (r *retainValue) String() string {
	switch {
	case r == nil || r.d == 0:
		return ""
	case r.d < 0:
		return "forever"
	case r.d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", r.d/(24*time.Hour))
	}
	return r.d.String()
}

// Set implements flag.Value.
func (r *retainValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "forever") {
		r.d, r.set = -1, true
		return nil
	}
	var d time.Duration
	if err := (&ageValue{d: &d}).Set(s); err != nil {
		return fmt.Errorf("invalid retention %q (want a number of days, a duration such as 12h or 7d, or forever)", s)
	}
	if d < time.Minute {
		return fmt.Errorf("invalid retention %q: keep rows at least a minute, or forever", s)
	}
	r.d, r.set = d, true
	return nil
}

// retentionFlags declares the work command's retention flags and returns
// a function that reads them into the worker's option.
func retentionFlags(fs *flag.FlagSet) func() (worker.Option, error) {
	mode := fs.String("retention", "on", "`on` or off: the cleaner that deletes old finished rows (see --retain-*)")
	ages := []struct {
		name string
		v    *retainValue
		set  func(r *worker.Retention, d time.Duration)
	}{
		{"retain-completed", &retainValue{d: worker.RetainCompletedDefault}, func(r *worker.Retention, d time.Duration) { r.Completed = d }},
		{"retain-buried", &retainValue{d: -1}, func(r *worker.Retention, d time.Duration) { r.Buried = d }},
		{"retain-logs", &retainValue{}, func(r *worker.Retention, d time.Duration) { r.Logs = d }},
		{"retain-workflows", &retainValue{d: worker.RetainWorkflowsDefault}, func(r *worker.Retention, d time.Duration) { r.Workflows = d }},
		{"retain-batches", &retainValue{d: worker.RetainBatchesDefault}, func(r *worker.Retention, d time.Duration) { r.Batches = d }},
	}
	usage := map[string]string{
		"retain-completed": "keep completed jobs this `age`: days (7), a duration (12h, 7d) or forever",
		"retain-buried":    "keep buried and failed jobs this `age` (default forever: they wait for an operator)",
		"retain-logs":      "keep log rows this `age` (default: --retain-completed)",
		"retain-workflows": "keep completed, failed and cancelled workflows, with their jobs, events, signals, artifacts and chunks, this `age`",
		"retain-batches":   "keep finished batches this `age`",
	}
	for _, a := range ages {
		fs.Var(a.v, a.name, usage[a.name])
	}
	interval := durationFlag(fs, "retention-interval", worker.RetentionIntervalDefault, "time between the cleaner's passes; one worker of the fleet runs a pass at a time")
	batch := fs.Int("retention-batch", worker.RetentionBatchDefault, "rows the cleaner deletes per transaction")
	return func() (worker.Option, error) {
		switch strings.ToLower(*mode) {
		case "off":
			for _, a := range ages {
				if a.v.set {
					return nil, Usagef("--%s has no effect with --retention off", a.name)
				}
			}
			return worker.NoRetention(), nil
		case "on":
		default:
			return nil, Usagef("--retention must be on or off, got %q", *mode)
		}
		if *interval < time.Second {
			return nil, Usagef("--retention-interval must be at least 1s, got %s", *interval)
		}
		if *batch < 1 || *batch > 10000 {
			return nil, Usagef("--retention-batch must be from 1 to 10000, got %d", *batch)
		}
		r := worker.Retention{Interval: *interval, BatchSize: *batch}
		for _, a := range ages {
			a.set(&r, a.v.d)
		}
		return worker.Retain(r), nil
	}
}
