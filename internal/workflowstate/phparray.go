package workflowstate

import (
	"sort"
	"strconv"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// This file holds helpers for the integer-keyed PHP arrays Queuety keeps in
// workflow state (_for_each_steps, a for-each step's results and failures,
// _repeat_steps). A *phpjson.Object with decimal keys behaves like one: it
// keeps insertion order and encodes as a JSON list exactly when its keys
// are 0..n-1 in order, as PHP's json_encode does.

// intArray reads a stored PHP array: a JSON list (keys 0..n-1) or an
// object whose keys are item indexes. Anything else is an empty array. The
// result is a new object the caller may change.
func intArray(v any) *phpjson.Object {
	out := phpjson.NewObject()
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			out.Set(strconv.Itoa(i), e)
		}
	case *phpjson.Object:
		for _, k := range x.Keys() {
			n, err := strconv.Atoi(k)
			if err != nil {
				n = 0 // PHP's (int) cast of a non-numeric key
			}
			e, _ := x.Get(k)
			out.Set(strconv.Itoa(n), e)
		}
	}
	return out
}

// IntKey is the array key of an index.
func IntKey(i int) string { return strconv.Itoa(i) }

// intKeys returns an int-keyed array's keys as numbers, in order.
func intKeys(a *phpjson.Object) []int {
	keys := a.Keys()
	out := make([]int, 0, len(keys))
	for _, k := range keys {
		n, _ := strconv.Atoi(k)
		out = append(out, n)
	}
	return out
}

// sortIntArray returns a copy of a with its keys in numeric order (PHP's
// ksort(SORT_NUMERIC)).
func sortIntArray(a *phpjson.Object) *phpjson.Object {
	keys := intKeys(a)
	sort.Ints(keys)
	out := phpjson.NewObject()
	for _, k := range keys {
		v, _ := a.Get(IntKey(k))
		out.Set(IntKey(k), v)
	}
	return out
}

// ListOf returns a stored list's elements: a JSON list, or an object's
// values in order (PHP's array_values). ok is false for anything else.
func ListOf(v any) (items []any, ok bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case *phpjson.Object:
		out := make([]any, 0, x.Len())
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			out = append(out, e)
		}
		return out, true
	}
	return nil, false
}

// ToInt reads a stored number or numeric string as PHP's (int) cast does
// for the values Queuety stores (ids, indexes, counters).
func ToInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	case bool:
		if n {
			return 1
		}
	}
	return 0
}
