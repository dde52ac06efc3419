package engine

import (
	"math"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

func validateResources(r JobResources) error {
	g := strings.TrimSpace(r.ConcurrencyGroup)
	switch {
	case r.ConcurrencyGroup != "" && g == "":
		return invalidf("concurrency group name is blank")
	case len(g) > 191:
		return invalidf("concurrency group name is longer than 191 characters")
	case r.ConcurrencyLimit < 0 || r.ConcurrencyLimit > 65535:
		return invalidf("concurrency limit %d out of range (1-65535)", r.ConcurrencyLimit)
	case r.ConcurrencyLimit > 0 && g == "":
		return invalidf("a concurrency limit needs a concurrency group")
	case r.CostUnitsSet && (r.CostUnits < 1 || r.CostUnits > 1<<31):
		return invalidf("cost units must be at least 1, got %d", r.CostUnits)
	case r.RateLimit != Rate{} && (r.RateLimit.Max < 1 || r.RateLimit.Window < time.Second):
		return invalidf("rate limit needs at least 1 start in a window of at least 1 second, got %d per %s", r.RateLimit.Max, r.RateLimit.Window)
	}
	return nil
}

// apply writes the row columns.
func applyResources(r JobResources, job *driver.Job) {
	job.ConcurrencyGroup = strings.TrimSpace(r.ConcurrencyGroup)
	job.ConcurrencyLimit = r.ConcurrencyLimit
	if r.CostUnitsSet {
		job.CostUnits = r.CostUnits
	}
}

// writeStepResources writes the settings into a step definition under the keys
// Queuety's StepDispatchOptions reads.
func writeStepResources(r JobResources, o *phpjson.Object) {
	if r.RateLimit.Max > 0 {
		o.Set("rate_limit", []any{int64(r.RateLimit.Max), int64(math.Ceil(r.RateLimit.Window.Seconds()))})
	}
	if g := strings.TrimSpace(r.ConcurrencyGroup); g != "" {
		o.Set("concurrency_group", g)
		if r.ConcurrencyLimit > 0 {
			o.Set("concurrency_limit", int64(r.ConcurrencyLimit))
		}
	}
	if r.CostUnitsSet {
		o.Set("cost_units", int64(r.CostUnits))
	}
}

// EncodeStepResources writes r into a step definition (see
// JobResources).
func EncodeStepResources(r JobResources, o *phpjson.Object) { writeStepResources(r, o) }
