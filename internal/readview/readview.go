package readview

import (
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Clock tells the read views the time (an export's exported_at).
type Clock interface {
	Now() time.Time
}

// Views reads workflows for people and tools: descriptions, exports,
// traces and the state after a step. Every view is one read-only store
// transaction. A Views is cheap to build and safe for concurrent use.
type Views struct {
	store driver.Store
	clock Clock
}

// New returns the read views of store. clock dates exports (nil: the
// system clock in UTC).
func New(store driver.Store, clock Clock) *Views {
	if clock == nil {
		clock = systemClock{}
	}
	return &Views{store: store, clock: clock}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// iso formats a time as ISO 8601 (RFC 3339) in UTC; "" for zero.
func iso(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// strField reads the string at k, trimmed; "" when it is not a string.
func strField(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

func ptr[T any](v T) *T { return &v }
