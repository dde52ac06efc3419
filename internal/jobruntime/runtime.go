package jobruntime

import (
	"math"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuetytype"
)

// Key is the payload key that holds the runtime object,
// __queuety_runtime. Queuety PHP writes and strips it too.
const Key = batch.RuntimeKey

// ValidateTimeouts checks activity timeouts before they are stored: each
// one set is at least one second.
func ValidateTimeouts(t queuetytype.ActivityTimeouts) error {
	for _, c := range []struct {
		name string
		d    time.Duration
	}{
		{"schedule-to-start", t.ScheduleToStart},
		{"start-to-close", t.StartToClose},
		{"schedule-to-close", t.ScheduleToClose},
		{"heartbeat", t.Heartbeat},
	} {
		if c.d != 0 && c.d < time.Second {
			return timeoutf("%s timeout must be at least 1 second, got %s", c.name, c.d)
		}
	}
	return nil
}

// Options is the decoded __queuety_runtime object of a payload: the
// policy a job carries with it.
type Options struct {
	// MaxAttempts is the attempt limit the payload asks for, at most
	// MaxAttemptsLimit; AskedMaxAttempts is the value as stored, which
	// Queuety PHP (or a hand-written payload) may set higher.
	MaxAttempts      int
	AskedMaxAttempts int64
	Backoff          queuetytype.Backoff
	Timeouts         queuetytype.ActivityTimeouts
	// TimeoutSeconds is Queuety's per-attempt execution limit
	// (timeout_seconds). The Go engine reads it as a start-to-close timeout.
	TimeoutSeconds int
	// RateLimit is Queuety's rate_limit: [max, window seconds].
	RateLimit queuetytype.Rate
}

// StartToClose is the effective per-attempt timeout.
func (r Options) StartToClose() time.Duration {
	if r.Timeouts.StartToClose > 0 {
		return r.Timeouts.StartToClose
	}
	if r.TimeoutSeconds > 0 {
		return time.Duration(r.TimeoutSeconds) * time.Second
	}
	return 0
}

// Parse reads __queuety_runtime from a payload. Unknown or malformed
// values are ignored, as Queuety PHP ignores them.
func Parse(payload *phpjson.Object) Options {
	var r Options
	raw, ok := payload.Get(Key)
	if !ok {
		return r
	}
	obj, ok := raw.(*phpjson.Object)
	if !ok {
		return r
	}
	r.AskedMaxAttempts = workflowdef.Int(obj, "max_attempts")
	r.MaxAttempts = ClampAttempts(r.AskedMaxAttempts)
	r.TimeoutSeconds = int(workflowdef.Int(obj, "timeout_seconds"))
	if v, ok := obj.Get("rate_limit"); ok {
		r.RateLimit = RateLimit(v)
	}
	if v, ok := obj.Get("backoff"); ok {
		switch b := v.(type) {
		case string:
			if s := queuetytype.BackoffStrategy(b); ValidateBackoff(s) == nil {
				r.Backoff = s
			}
		case []any:
			var secs []int
			for _, e := range b {
				if n, ok := e.(int64); ok && n >= 0 {
					secs = append(secs, int(n))
				}
			}
			if len(secs) > 0 {
				r.Backoff = List(secs)
			}
		}
	}
	if v, ok := obj.Get("backoff_policy"); ok {
		if p, ok := v.(*phpjson.Object); ok {
			b := Exponential{
				Initial:     time.Duration(workflowdef.Int(p, "initial_ms")) * time.Millisecond,
				Coefficient: floatValue(p, "coefficient"),
				Maximum:     time.Duration(workflowdef.Int(p, "max_ms")) * time.Millisecond,
			}
			if ValidateBackoff(b) == nil {
				r.Backoff = b
			}
		}
	}
	ms := func(k string) time.Duration { return time.Duration(workflowdef.Int(obj, k)) * time.Millisecond }
	r.Timeouts = queuetytype.ActivityTimeouts{
		ScheduleToStart: ms("schedule_to_start_ms"),
		StartToClose:    ms("start_to_close_ms"),
		ScheduleToClose: ms("schedule_to_close_ms"),
		Heartbeat:       ms("heartbeat_timeout_ms"),
	}
	return r
}

// Encode writes the runtime object in Queuety's key order, followed by the
// Go engine's keys (which Queuety PHP ignores).
func (r Options) Encode() *phpjson.Object {
	o := phpjson.NewObject()
	if r.MaxAttempts > 0 {
		o.Set("max_attempts", int64(r.MaxAttempts))
	}
	switch b := r.Backoff.(type) {
	case queuetytype.BackoffStrategy:
		o.Set("backoff", string(b))
	case List:
		list := make([]any, len(b))
		for i, s := range b {
			list[i] = int64(s)
		}
		o.Set("backoff", list)
	case Exponential:
		p := phpjson.NewObject()
		p.Set("initial_ms", b.Initial.Milliseconds())
		p.Set("coefficient", b.Coefficient)
		p.Set("max_ms", b.Maximum.Milliseconds())
		o.Set("backoff_policy", p)
	}
	if r.RateLimit.Max > 0 {
		o.Set("rate_limit", []any{int64(r.RateLimit.Max), int64(math.Ceil(r.RateLimit.Window.Seconds()))})
	}
	if r.TimeoutSeconds > 0 {
		o.Set("timeout_seconds", int64(r.TimeoutSeconds))
	} else if r.Timeouts.StartToClose > 0 {
		o.Set("timeout_seconds", int64(math.Ceil(r.Timeouts.StartToClose.Seconds())))
	}
	set := func(k string, d time.Duration) {
		if d > 0 {
			o.Set(k, d.Milliseconds())
		}
	}
	set("schedule_to_start_ms", r.Timeouts.ScheduleToStart)
	set("start_to_close_ms", r.Timeouts.StartToClose)
	set("schedule_to_close_ms", r.Timeouts.ScheduleToClose)
	set("heartbeat_timeout_ms", r.Timeouts.Heartbeat)
	return o
}

// ClampAttempts turns a stored attempt limit into one the attempts column
// can count to: at most MaxAttemptsLimit (a TINYINT UNSIGNED holds 255).
// Zero and negative values stay as they are: callers read them as "not
// set".
func ClampAttempts(n int64) int {
	return int(min(n, queuetytype.MaxAttemptsLimit))
}

func floatValue(o *phpjson.Object, k string) float64 {
	switch v, _ := o.Get(k); n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// EncodeStep returns a step definition's retry and timeout keys
// (backoff, backoff_policy, timeout_seconds and the Go timeout keys) in
// the order Queuety's runtime object uses.
func EncodeStep(b queuetytype.Backoff, t queuetytype.ActivityTimeouts) *phpjson.Object {
	return Options{Backoff: b, Timeouts: t}.Encode()
}

// FromDefinition reads the runtime options a step definition carries
// (backoff, timeout_seconds, the Go timeout keys, the grouped retry
// object and the rate limit under resources).
func FromDefinition(def *phpjson.Object) Options {
	wrapper := phpjson.NewObject()
	wrapper.Set(Key, def)
	rt := Parse(wrapper)
	if v, ok := def.Get("retry"); ok { // grouped form: retry{max_attempts, backoff}
		if ro, ok := v.(*phpjson.Object); ok && rt.Backoff == nil {
			w := phpjson.NewObject()
			w.Set(Key, ro)
			rt.Backoff = Parse(w).Backoff
		}
	}
	if rt.RateLimit.Max == 0 {
		v, _ := def.Get("resources")
		if res, ok := v.(*phpjson.Object); ok {
			if v, ok := res.Get("rate_limit"); ok {
				rt.RateLimit = RateLimit(v)
			}
		}
	}
	return rt
}
