package engine

import (
	"math"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// Reserved payload keys. Queuety PHP writes and strips the first two; the
// third is the Go engine's marker on deadline and cancel callback jobs.
const (
	runtimeKey   = batch.RuntimeKey
	chainKey     = batch.ChainKey
	callbackKey  = batch.CallbackKey
	forEachKey   = workflowstate.ForEachKey
	stepIndexKey = "step_index"
)

func validateTimeouts(t ActivityTimeouts) error {
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

// runtimeOptions is the decoded __queuety_runtime object of a payload: the
// policy a job carries with it.
type runtimeOptions struct {
	// MaxAttempts is the attempt limit the payload asks for, at most
	// MaxAttemptsLimit; AskedMaxAttempts is the value as stored, which
	// Queuety PHP (or a hand-written payload) may set higher.
	MaxAttempts      int
	AskedMaxAttempts int64
	Backoff          Backoff
	Timeouts         ActivityTimeouts
	// TimeoutSeconds is Queuety's per-attempt execution limit
	// (timeout_seconds). The Go engine reads it as a start-to-close timeout.
	TimeoutSeconds int
	// RateLimit is Queuety's rate_limit: [max, window seconds].
	RateLimit Rate
}

// startToClose is the effective per-attempt timeout.
func (r runtimeOptions) startToClose() time.Duration {
	if r.Timeouts.StartToClose > 0 {
		return r.Timeouts.StartToClose
	}
	if r.TimeoutSeconds > 0 {
		return time.Duration(r.TimeoutSeconds) * time.Second
	}
	return 0
}

// parseRuntime reads __queuety_runtime from a payload. Unknown or
// malformed values are ignored, as Queuety PHP ignores them.
func parseRuntime(payload *phpjson.Object) runtimeOptions {
	var r runtimeOptions
	raw, ok := payload.Get(runtimeKey)
	if !ok {
		return r
	}
	obj, ok := raw.(*phpjson.Object)
	if !ok {
		return r
	}
	r.AskedMaxAttempts = intValue(obj, "max_attempts")
	r.MaxAttempts = clampAttempts(r.AskedMaxAttempts)
	r.TimeoutSeconds = int(intValue(obj, "timeout_seconds"))
	if v, ok := obj.Get("rate_limit"); ok {
		r.RateLimit = rateLimitValue(v)
	}
	if v, ok := obj.Get("backoff"); ok {
		switch b := v.(type) {
		case string:
			if s := BackoffStrategy(b); validateBackoff(s) == nil {
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
				r.Backoff = listBackoff(secs)
			}
		}
	}
	if v, ok := obj.Get("backoff_policy"); ok {
		if p, ok := v.(*phpjson.Object); ok {
			b := exponentialBackoff{
				Initial:     time.Duration(intValue(p, "initial_ms")) * time.Millisecond,
				Coefficient: floatValue(p, "coefficient"),
				Maximum:     time.Duration(intValue(p, "max_ms")) * time.Millisecond,
			}
			if validateBackoff(b) == nil {
				r.Backoff = b
			}
		}
	}
	ms := func(k string) time.Duration { return time.Duration(intValue(obj, k)) * time.Millisecond }
	r.Timeouts = ActivityTimeouts{
		ScheduleToStart: ms("schedule_to_start_ms"),
		StartToClose:    ms("start_to_close_ms"),
		ScheduleToClose: ms("schedule_to_close_ms"),
		Heartbeat:       ms("heartbeat_timeout_ms"),
	}
	return r
}

// encode writes the runtime object in Queuety's key order, followed by the
// Go engine's keys (which Queuety PHP ignores).
func (r runtimeOptions) encode() *phpjson.Object {
	o := phpjson.NewObject()
	if r.MaxAttempts > 0 {
		o.Set("max_attempts", int64(r.MaxAttempts))
	}
	switch b := r.Backoff.(type) {
	case BackoffStrategy:
		o.Set("backoff", string(b))
	case listBackoff:
		list := make([]any, len(b))
		for i, s := range b {
			list[i] = int64(s)
		}
		o.Set("backoff", list)
	case exponentialBackoff:
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

// clampAttempts turns a stored attempt limit into one the attempts column
// can count to: at most MaxAttemptsLimit (a TINYINT UNSIGNED holds 255).
// Zero and negative values stay as they are: callers read them as "not
// set".
func clampAttempts(n int64) int {
	return int(min(n, MaxAttemptsLimit))
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

// IsReservedPayloadKey reports whether k is a payload key the engine owns
// (__queuety_runtime, __queuety_callback), which callers may not set.
func IsReservedPayloadKey(k string) bool { return k == runtimeKey || k == callbackKey }

// EncodeStepRuntime returns a step definition's retry and timeout keys
// (backoff, backoff_policy, timeout_seconds and the Go timeout keys) in
// the order Queuety's runtime object uses.
func EncodeStepRuntime(b Backoff, t ActivityTimeouts) *phpjson.Object {
	return runtimeOptions{Backoff: b, Timeouts: t}.encode()
}
