package jobruntime

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// List is a backoff of explicit delays in seconds; the last repeats.
type List []int

// Delay implements Backoff.
func (l List) Delay(attempt int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := min(max(attempt-1, 0), len(l)-1)
	return time.Duration(l[i]) * time.Second
}

// String implements Backoff.
func (l List) String() string { return fmt.Sprint([]int(l)) }

// Exponential is a backoff that grows by a coefficient per attempt,
// Temporal style.
type Exponential struct {
	Initial     time.Duration
	Coefficient float64
	Maximum     time.Duration
}

// Delay implements Backoff.
func (e Exponential) Delay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := float64(e.Initial) * math.Pow(e.Coefficient, float64(attempt-1))
	if d > float64(e.Maximum) || math.IsInf(d, 0) || math.IsNaN(d) {
		return e.Maximum
	}
	return time.Duration(d)
}

// String implements Backoff.
func (e Exponential) String() string {
	return fmt.Sprintf("exponential(initial=%s, coefficient=%g, max=%s)", e.Initial, e.Coefficient, e.Maximum)
}

// ValidateBackoff checks a backoff before it is stored.
func ValidateBackoff(b queuetytype.Backoff) error {
	switch v := b.(type) {
	case nil:
		return nil
	case queuetytype.BackoffStrategy:
		switch v {
		case queuetytype.BackoffExponential, queuetytype.BackoffFixed, queuetytype.BackoffLinear:
			return nil
		}
		return invalidf("unknown backoff strategy %q (want exponential, fixed or linear)", string(v))
	case List:
		if len(v) == 0 {
			return invalidf("backoff list is empty")
		}
		for _, s := range v {
			if s < 0 {
				return invalidf("backoff seconds must not be negative, got %d", s)
			}
		}
		return nil
	case Exponential:
		switch {
		case v.Initial < time.Millisecond:
			return invalidf("backoff initial interval must be at least 1ms, got %s", v.Initial)
		case v.Coefficient < 1:
			return invalidf("backoff coefficient cannot be less than 1, got %g", v.Coefficient)
		case v.Maximum < v.Initial:
			return invalidf("backoff maximum interval %s cannot be less than initial interval %s", v.Maximum, v.Initial)
		}
		return nil
	}
	return invalidf("unsupported backoff type %T", b)
}

// BackoffSeconds waits secs[attempt-1] seconds after a failure; the last
// value repeats.
func BackoffSeconds(secs ...int) queuetytype.Backoff { return List(append([]int(nil), secs...)) }

// BackoffPolicy waits initial × coefficient^(attempt-1), capped at
// maximum. Zero coefficient means 2; zero maximum means 100 × initial.
func BackoffPolicy(initial time.Duration, coefficient float64, maximum time.Duration) queuetytype.Backoff {
	if coefficient == 0 {
		coefficient = 2
	}
	if maximum == 0 {
		maximum = 100 * initial
	}
	return Exponential{Initial: initial, Coefficient: coefficient, Maximum: maximum}
}

// ParseBackoff reads a backoff from the CLI: "exponential", "fixed",
// "linear", or a comma-separated list of seconds ("10,30,60").
func ParseBackoff(s string) (queuetytype.Backoff, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "exponential", "fixed", "linear":
		return queuetytype.BackoffStrategy(s), nil
	}
	var secs []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, invalidf("backoff %q: want exponential, fixed, linear or a list of seconds", s)
		}
		secs = append(secs, n)
	}
	b := BackoffSeconds(secs...)
	return b, ValidateBackoff(b)
}
