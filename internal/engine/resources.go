package engine

import (
	"math"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// resources are a step job's concurrency group, its limit and its cost
// units.
type resources struct {
	group string
	limit int
	cost  int
}

// stepResources reads a step definition's concurrency_group,
// concurrency_limit and cost_units, on the step or in its resources
// object, as Queuety's StepDispatchOptions::resolve does: a blank group is
// none, and a limit without a group is dropped.
func stepResources(def *phpjson.Object, defaultCost int) resources {
	res, _ := mustObject(def, "resources")
	get := func(k string) any {
		if v, ok := def.Get(k); ok && v != nil {
			return v
		}
		if res != nil {
			if v, ok := res.Get(k); ok {
				return v
			}
		}
		return nil
	}
	r := resources{cost: defaultCost}
	if g, ok := get("concurrency_group").(string); ok {
		r.group = strings.TrimSpace(g)
	}
	if n, ok := get("concurrency_limit").(int64); ok && n > 0 && r.group != "" {
		r.limit = int(min(n, 65535))
	}
	if n, ok := get("cost_units").(int64); ok && n >= 0 {
		r.cost = int(n)
	}
	return r
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
