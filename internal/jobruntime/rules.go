package jobruntime

import (
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func timeoutf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidTimeout, fmt.Sprintf(format, args...))
}

// RateLimit reads a rate limit as Queuety's StepDispatchOptions
// accepts it: [max, window seconds], or an object with max (or
// max_executions) and window (or window_seconds). Anything else, and
// values below 1, is no limit.
func RateLimit(v any) queuetytype.Rate {
	var n, w any
	switch x := v.(type) {
	case []any:
		if len(x) >= 2 {
			n, w = x[0], x[1]
		}
	case *phpjson.Object:
		n = firstOf(x, "max", "max_executions", "0")
		w = firstOf(x, "window", "window_seconds", "1")
	}
	max, ok1 := n.(int64)
	win, ok2 := w.(int64)
	if !ok1 || !ok2 || max < 1 || win < 1 {
		return queuetytype.Rate{}
	}
	return queuetytype.Rate{Max: int(max), Window: time.Duration(win) * time.Second}
}

func firstOf(o *phpjson.Object, keys ...string) any {
	for _, k := range keys {
		if v, ok := o.Get(k); ok && v != nil {
			return v
		}
	}
	return nil
}
