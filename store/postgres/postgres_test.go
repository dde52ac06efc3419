package postgres_test

import (
	"testing"

	"github.com/queuety/queuety-go/internal/testdb"
	_ "github.com/queuety/queuety-go/store/postgres"
	"github.com/queuety/queuety-go/store/storetest"
)

// harness gives every case a schema of its own, dropped when it ends.
var harness = storetest.Harness{DSN: func(tb testing.TB) string {
	dsn, _ := testdb.PostgresDSN(tb)
	return dsn
}}

func TestDriver(t *testing.T) {
	t.Parallel()
	storetest.RunDriver(t, harness)
}

func TestAcceptance(t *testing.T) {
	t.Parallel()
	storetest.RunAcceptance(t, harness)
}

// BenchmarkDriver runs the twin benchmarks of storetest.Bench, the same
// operations on every store.
func BenchmarkDriver(b *testing.B) { storetest.Bench(b, harness) }
