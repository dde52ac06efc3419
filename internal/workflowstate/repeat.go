package workflowstate

import "github.com/queuety/queuety-go/internal/phpjson"

// A repeat step counts its jumps back in _repeat_steps[step index]
// {"iterations": n}; its condition compares stored values as Queuety does.

// ValuesEqual compares two stored values as Queuety's values_equal does:
// objects compare regardless of key order, lists in order.
func ValuesEqual(a, b any) bool {
	return string(EncodeJSON(canonical(a))) == string(EncodeJSON(canonical(b)))
}

// canonical sorts object keys, recursively.
func canonical(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		keys := x.Keys()
		if phpjson.ListKeys(keys) {
			out := make([]any, len(keys))
			for i, k := range keys {
				e, _ := x.Get(k)
				out[i] = canonical(e)
			}
			return out
		}
		out := phpjson.NewObject()
		for _, k := range SortedKeys(x.ToMap()) {
			e, _ := x.Get(k)
			out.Set(k, canonical(e))
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return v
}

// RepeatIterations is the count stored for a repeat step.
func RepeatIterations(state *phpjson.Object, idx int) int64 {
	raw, _ := state.Get("_repeat_steps")
	v, _ := intArray(raw).Get(IntKey(idx))
	o, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := o.Get("iterations")
	return max(0, ToInt(n))
}

// RepeatSteps returns _repeat_steps with step idx's count set.
func RepeatSteps(state *phpjson.Object, idx int, iterations int64) *phpjson.Object {
	raw, _ := state.Get("_repeat_steps")
	in := intArray(raw)
	out := phpjson.NewObject()
	for _, k := range in.Keys() {
		v, _ := in.Get(k)
		o, ok := v.(*phpjson.Object)
		if !ok {
			continue
		}
		n, _ := o.Get("iterations")
		e := phpjson.NewObject()
		e.Set("iterations", max(0, ToInt(n)))
		out.Set(k, e)
	}
	e := phpjson.NewObject()
	e.Set("iterations", max(0, iterations))
	out.Set(IntKey(idx), e)
	return out
}
