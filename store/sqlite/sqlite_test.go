package sqlite_test

import (
	"path/filepath"
	"testing"

	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/store/storetest"
)

// harness gives every case a fresh database file. SQLite serialises
// writers: every transaction begins IMMEDIATE.
var harness = storetest.Harness{
	DSN: func(tb testing.TB) string {
		return "sqlite://" + filepath.Join(tb.TempDir(), "queuety.db")
	},
	SerialWriters: true,
}

func TestDriver(t *testing.T) { storetest.RunDriver(t, harness) }

func TestAcceptance(t *testing.T) { storetest.RunAcceptance(t, harness) }
