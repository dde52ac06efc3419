package queuety

import (
	"encoding/json"
	"fmt"

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
