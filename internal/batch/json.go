package batch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// Reserved payload keys the batch and chain callback jobs share with the
// engine. Queuety PHP writes and strips the first two; the third is the Go
// engine's marker on callback jobs.
const (
	RuntimeKey  = "__queuety_runtime"
	ChainKey    = "__chain_catch"
	CallbackKey = "__queuety_callback"
)

// encodeJSON writes v the way Queuety PHP does. The values reaching here
// were decoded from JSON or built by this package, so they always encode.
func encodeJSON(v any) []byte {
	b, err := phpjson.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("queuety: encode JSON: %v", err))
	}
	return b
}

// decodeObject parses stored JSON text as an object, accepting PHP's "[]".
func decodeObject(what string, b []byte) (*phpjson.Object, error) {
	if len(b) == 0 {
		return phpjson.NewObject(), nil
	}
	o, err := phpjson.DecodeObject(b)
	if err != nil {
		return nil, fmt.Errorf("queuety: malformed %s JSON: %w", what, err)
	}
	return o, nil
}

// truthy reads a stored flag as PHP's boolean cast does.
func truthy(o *phpjson.Object, k string) bool {
	switch v, _ := o.Get(k); x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	case []any:
		return len(x) > 0
	case *phpjson.Object:
		return x.Len() > 0
	}
	return true
}

// strField returns the trimmed string at k, "" when it is not a string.
func strField(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// listOf returns a stored list's elements: a JSON list, or an object's
// values in order (PHP's array_values). ok is false for anything else.
func listOf(v any) (items []any, ok bool) {
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

// toInt reads a stored number or numeric string as PHP's (int) cast does
// for the values Queuety stores (ids).
func toInt(v any) int64 {
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
