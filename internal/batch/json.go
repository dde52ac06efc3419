package batch

import (
	"fmt"
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

// strField returns the trimmed string at k, "" when it is not a string.
func strField(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}
