package mysql_test

import (
	"testing"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/storetest"
)

// harness gives every case a fresh table prefix cloned from the migrated
// template.
var harness = storetest.Harness{DSN: func(tb testing.TB) string {
	dsn, _ := migrated.DSN(tb)
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
// operations on both stores.
func BenchmarkDriver(b *testing.B) { storetest.Bench(b, harness) }
