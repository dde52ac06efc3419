package phpjson

import (
	"cmp"
	"slices"
	"strconv"
)

// CanonicalInt reports whether k is a decimal integer in the form PHP turns
// into an integer array key ("0", "42", "-7", but not "007", "-0", "+1" or a
// value outside the int64 range), and returns its value.
func CanonicalInt(k string) (int64, bool) {
	if k == "" || len(k) > 20 {
		return 0, false
	}
	digits := k
	if k[0] == '-' {
		digits = k[1:]
		if digits == "" || digits[0] == '0' {
			return 0, false
		}
	} else if k[0] == '0' && len(k) > 1 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(k, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// SortKeys puts map keys in a deterministic order: numerically when every key
// is a canonical integer, bytewise otherwise.
func SortKeys(keys []string) {
	if len(keys) < 2 {
		return
	}
	order, ok := numericOrder(keys)
	if !ok {
		slices.Sort(keys)
		return
	}
	sorted := make([]string, len(keys))
	for i, j := range order {
		sorted[i] = keys[j]
	}
	copy(keys, sorted)
}

// numericOrder returns the positions of keys in the numeric order of
// the keys, and false when a key is not a canonical integer.
func numericOrder(keys []string) ([]int, bool) {
	nums := make([]int64, len(keys))
	for i, k := range keys {
		n, ok := CanonicalInt(k)
		if !ok {
			return nil, false
		}
		nums[i] = n
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(nums[a], nums[b]) })
	return order, true
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortKeys(keys)
	return keys
}

// isIndex reports whether k is the decimal form of i.
func isIndex(k string, i int) bool {
	var buf [20]byte
	return string(strconv.AppendInt(buf[:0], int64(i), 10)) == k
}

// isListKeys reports whether keys are exactly "0", "1", ..., "n-1" in order,
// which is when PHP writes an array as a JSON list.
func isListKeys(keys []string) bool {
	for i, k := range keys {
		if !isIndex(k, i) {
			return false
		}
	}
	return true
}

// needsNumericResort reports whether keys are all canonical integers that are
// in strictly increasing bytewise order but not in numeric order. That is how
// encoding/json orders an integer-keyed Go map.
func needsNumericResort(keys []string) bool {
	if len(keys) < 2 {
		return false
	}
	numericOrder := true
	var prev int64
	for i, k := range keys {
		n, ok := CanonicalInt(k)
		if !ok {
			return false
		}
		if i > 0 {
			if keys[i-1] >= k {
				return false
			}
			if prev > n {
				numericOrder = false
			}
		}
		prev = n
	}
	return !numericOrder
}

// IntKey reports whether an object key is one PHP stores as an integer
// array key ("0", "42", "-7"; not "007" or "+1"), and returns its value.
func IntKey(k string) (int64, bool) { return CanonicalInt(k) }

// ListKeys reports whether keys are "0".."n-1" in order: an object with
// them is a PHP list, and encodes as a JSON list.
func ListKeys(keys []string) bool { return isListKeys(keys) }
