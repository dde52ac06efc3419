package driver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Driver opens a Store from a DSN. Stores register a Driver under their
// URL scheme in an init function, the way database/sql drivers do:
//
//	import _ "github.com/queuety/queuety-go/store/mysql"
//
// queuety.Open finds the driver by the DSN's scheme.
type Driver interface {
	Open(ctx context.Context, dsn string) (Store, error)
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes a store driver available under scheme ("mysql",
// "sqlite"). It panics when called twice for one scheme or with a nil
// driver, since both are programming errors.
func Register(scheme string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d == nil {
		panic("driver: Register driver is nil")
	}
	if _, dup := drivers[scheme]; dup {
		panic("driver: Register called twice for scheme " + scheme)
	}
	drivers[scheme] = d
}

// Drivers returns the registered schemes, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for s := range drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open opens the Store a DSN names through its registered driver,
// without running migrations.
func Open(ctx context.Context, dsn string) (Store, error) {
	scheme := SchemeOf(dsn)
	driversMu.RLock()
	d := drivers[scheme]
	driversMu.RUnlock()
	if d == nil {
		pkg := scheme
		if scheme == "postgresql" {
			pkg = "postgres" // one package serves both schemes
		}
		return nil, fmt.Errorf("queuety: no store registered for %q (import _ \"github.com/queuety/queuety-go/store/%s\"; registered: %s)",
			scheme, pkg, strings.Join(Drivers(), ", "))
	}
	s, err := d.Open(ctx, dsn)
	if err != nil {
		return nil, RedactError(fmt.Errorf("queuety: open %s store: %w", scheme, err), dsn)
	}
	return s, nil
}

// NewDriver returns the Driver of a store that reads a DSN with parse and
// opens the parsed configuration with open, the way every store in this
// module does.
func NewDriver[C any, S Store](parse func(dsn string) (C, error), open func(ctx context.Context, cfg C) (S, error)) Driver {
	return driverFunc(func(ctx context.Context, dsn string) (Store, error) {
		cfg, err := parse(dsn)
		if err != nil {
			return nil, err
		}
		return open(ctx, cfg)
	})
}

type driverFunc func(ctx context.Context, dsn string) (Store, error)

func (f driverFunc) Open(ctx context.Context, dsn string) (Store, error) { return f(ctx, dsn) }
