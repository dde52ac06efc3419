package engine

import (
	"math"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
)

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
