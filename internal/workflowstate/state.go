package workflowstate

import (
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
)

// IsPrivateKey reports whether a state key belongs to the engine.
func IsPrivateKey(k string) bool { return strings.HasPrefix(k, "_") }

// PublicState returns the keys of a stored state that steps and handlers
// may see, in stored order.
func PublicState(doc *phpjson.Object) *phpjson.Object {
	return doc.Filter(isPublicKey)
}

// PublicMap is PublicState(doc).ToMap(), without the intermediate object.
func PublicMap(doc *phpjson.Object) map[string]any {
	return doc.FilterMap(isPublicKey)
}

func isPublicKey(k string) bool { return !IsPrivateKey(k) }

// EncodeJSON writes v the way Queuety PHP does.
func EncodeJSON(v any) []byte {
	b, err := phpjson.Marshal(v)
	if err != nil {
		// Values reaching here were decoded from JSON or validated at the
		// API boundary, so they always encode. A failure is a bug.
		panic(fmt.Sprintf("queuety: encode JSON: %v", err))
	}
	return b
}

// EncodePublicJSON is EncodeJSON(PublicState(doc)), without the
// intermediate object.
func EncodePublicJSON(doc *phpjson.Object) []byte {
	b, err := phpjson.MarshalFilter(doc, isPublicKey)
	if err != nil {
		panic(fmt.Sprintf("queuety: encode JSON: %v", err))
	}
	return b
}

// EncodeJSONMemo writes v as EncodeJSON does, the objects memo keeps
// from their remembered encodings (memo may be nil); sizeHint is the
// length expected.
func EncodeJSONMemo(v any, memo *phpjson.Memo, sizeHint int) []byte {
	b, err := phpjson.MarshalMemo(v, memo, sizeHint)
	if err != nil {
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

// EncodeUserJSON encodes a value that came from user code and may not be
// representable (NaN, invalid UTF-8, channels).
func EncodeUserJSON(what string, v any) ([]byte, error) {
	_, b, err := normalizeJSON(v)
	if err != nil {
		return nil, invalidf("%s does not encode as JSON: %v", what, err)
	}
	return b, nil
}

// DecodeObject parses stored JSON text as an object, accepting PHP's "[]".
func DecodeObject(what string, b []byte) (*phpjson.Object, error) {
	if len(b) == 0 {
		return phpjson.NewObject(), nil
	}
	o, err := phpjson.DecodeObject(b)
	if err != nil {
		return nil, fmt.Errorf("queuety: malformed %s JSON: %w", what, err)
	}
	return o, nil
}

// UserObject converts a State from user code (a step's output, a
// continue-as-new state) into an ordered object, keys sorted since Go maps
// have no order. It rejects values that do not encode as JSON; what names
// the value in the error.
func UserObject(what string, s map[string]any) (*phpjson.Object, error) {
	if len(s) == 0 {
		return phpjson.NewObject(), nil
	}
	n, _, err := normalizeJSON(s)
	if err != nil {
		return nil, fmt.Errorf("%s does not encode as JSON: %w", what, err)
	}
	o, ok := n.(*phpjson.Object)
	if !ok {
		return phpjson.NewObject(), nil
	}
	return o, nil
}

// ToObject converts a payload, initial state or signal body (a State, a
// map, a struct, or nil) into an ordered JSON object. Struct fields keep
// their order; map keys are sorted. Anything that does not encode as JSON
// (NaN, invalid UTF-8), or is not a JSON object, is rejected.
func ToObject(what string, v any) (*phpjson.Object, error) {
	if v == nil {
		return phpjson.NewObject(), nil
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

// invalidf is an invalid argument: a value from user code the engine
// refuses.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// RunTimeoutKey stores a workflow's run timeout in its private state.
const RunTimeoutKey = "_run_timeout_seconds"

// JSONColumn is Queuety's row_nullable_json_array: a stored JSON array or
// object, or nil.
func JSONColumn(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return nil
	}
	switch v.(type) {
	case *phpjson.Object, []any:
		return v
	}
	return nil
}
