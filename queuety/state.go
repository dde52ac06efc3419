package queuety

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// State is a JSON object: a workflow's public state, or a job's payload.
//
// Values are what JSON decoding gives: string, bool, nil, int64 (integer
// literals), float64 (other numbers), []any and map[string]any. Steps return
// a State holding the keys to merge into the workflow's state.
//
// Keys that start with "_" are private to the engine. Steps never see them,
// and keys a step returns with a leading "_" are dropped, except the
// control key "_next_step" (jump to the named step).
type State map[string]any

// Payload is the JSON object a plain job carries. It is a State by another
// name; the engine's reserved "__queuety_*" keys are removed before a
// handler sees it.
type Payload = State

// Int returns the integer at key. It accepts int64, float64 with no
// fraction, and json.Number.
func (s State) Int(key string) (int64, bool) {
	switch v := s[key].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

// String returns the string at key, or "" when it is missing or not a string.
func (s State) String(key string) string {
	v, _ := s[key].(string)
	return v
}

// Bool returns the bool at key, or false.
func (s State) Bool(key string) bool {
	v, _ := s[key].(bool)
	return v
}

// Decode copies the state into dst (a pointer to a struct or map) through
// encoding/json, so struct tags apply.
func (s State) Decode(dst any) error {
	b, err := json.Marshal(map[string]any(s))
	if err != nil {
		return fmt.Errorf("queuety: encode state: %w", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("queuety: decode state into %T: %w", dst, err)
	}
	return nil
}

// StateOf converts v (a struct, a map, a State, or nil) into a State. The
// value must encode as a JSON object.
func StateOf(v any) (State, error) {
	switch x := v.(type) {
	case nil:
		return State{}, nil
	case State:
		return x, nil
	case map[string]any:
		return State(x), nil
	}
	n, err := phpjson.Normalize(v)
	if err != nil {
		return nil, invalidf("payload %T does not encode as JSON: %v", v, err)
	}
	switch o := n.(type) {
	case *phpjson.Object:
		return State(o.ToMap()), nil
	case []any:
		if len(o) == 0 {
			return State{}, nil
		}
	}
	return nil, invalidf("payload must be a JSON object, got %T", v)
}

// isPrivateKey reports whether a state key belongs to the engine.
func isPrivateKey(k string) bool { return strings.HasPrefix(k, "_") }

// publicState returns the keys of a stored state that steps and handlers
// may see, in stored order.
func publicState(doc *phpjson.Object) *phpjson.Object {
	out := phpjson.NewObject()
	for _, k := range doc.Keys() {
		if isPrivateKey(k) {
			continue
		}
		v, _ := doc.Get(k)
		out.Set(k, v)
	}
	return out
}

// toState converts an ordered object into a State for a handler.
func toState(doc *phpjson.Object) State { return State(doc.ToMap()) }

// encodeJSON writes v the way Queuety PHP does.
func encodeJSON(v any) []byte {
	b, err := phpjson.Marshal(v)
	if err != nil {
		// Values reaching here were decoded from JSON or validated at the
		// API boundary, so they always encode. A failure is a bug.
		panic(fmt.Sprintf("queuety: encode JSON: %v", err))
	}
	return b
}

// normalizeJSON converts a value from user code into the JSON tree
// phpjson writes, and checks that the tree encodes: Normalize alone lets
// NaN and invalid UTF-8 through. It returns the tree and its encoding.
func normalizeJSON(v any) (any, []byte, error) {
	n, err := phpjson.Normalize(v)
	if err != nil {
		return nil, nil, err
	}
	b, err := phpjson.Marshal(n)
	if err != nil {
		return nil, nil, err
	}
	return n, b, nil
}

// encodeUserJSON encodes a value that came from user code and may not be
// representable (NaN, invalid UTF-8, channels).
func encodeUserJSON(what string, v any) ([]byte, error) {
	_, b, err := normalizeJSON(v)
	if err != nil {
		return nil, invalidf("%s does not encode as JSON: %v", what, err)
	}
	return b, nil
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

// stateObject converts a State from user code (a step's output, a
// continue-as-new state) into an ordered object, keys sorted since Go maps
// have no order. It rejects values that do not encode as JSON; what names
// the value in the error.
func stateObject(what string, s State) (*phpjson.Object, error) {
	if len(s) == 0 {
		return phpjson.NewObject(), nil
	}
	n, _, err := normalizeJSON(map[string]any(s))
	if err != nil {
		return nil, fmt.Errorf("%s does not encode as JSON: %w", what, err)
	}
	o, ok := n.(*phpjson.Object)
	if !ok {
		return phpjson.NewObject(), nil
	}
	return o, nil
}

// toObject converts a payload, initial state or signal body (a State, a
// map, a struct, or nil) into an ordered JSON object. Struct fields keep
// their order; map keys are sorted. Anything that does not encode as JSON
// (NaN, invalid UTF-8), or is not a JSON object, is rejected.
func toObject(what string, v any) (*phpjson.Object, error) {
	if v == nil {
		return phpjson.NewObject(), nil
	}
	if s, ok := v.(State); ok {
		v = map[string]any(s)
	}
	n, _, err := normalizeJSON(v)
	if err != nil {
		return nil, invalidf("%s does not encode as JSON: %v", what, err)
	}
	switch x := n.(type) {
	case *phpjson.Object:
		return x, nil
	case []any:
		if len(x) != 0 {
			return nil, invalidf("%s must be a JSON object, got a list", what)
		}
	case nil:
	default:
		return nil, invalidf("%s must be a JSON object, got %T", what, v)
	}
	return phpjson.NewObject(), nil
}
