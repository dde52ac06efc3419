package phpjson

import (
	"math"
	"unicode/utf8"
)

// RoundTrips reports whether Decode(Marshal(v)) returns a tree equal to
// v, so that a caller holding v need not decode its encoding again. It is
// conservative: true only for the generic tree Decode itself builds
// (non-empty *Object whose keys are not "0".."n-1", non-nil []any, valid
// UTF-8 strings, int64, non-integral finite float64, bool and nil). An
// empty or list-keyed *Object (written as a list), a whole float64
// (written as an integer), other Go types and nesting deeper than Decode
// takes report false.
func RoundTrips(v any) bool { return roundTrips(v, 0) }

func roundTrips(v any, depth int) bool {
	switch x := v.(type) {
	case nil, bool, int64:
		return true
	case string:
		return utf8.ValidString(x)
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0) && x != math.Trunc(x)
	case *Object:
		if x == nil || len(x.keys) == 0 || isListKeys(x.keys) || depth >= maxDepth {
			return false
		}
		for i, k := range x.keys {
			if !utf8.ValidString(k) || !roundTrips(x.vals[i], depth+1) {
				return false
			}
		}
		return true
	case []any:
		if x == nil || depth >= maxDepth {
			return false
		}
		for _, e := range x {
			if !roundTrips(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
