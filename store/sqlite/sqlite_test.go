package sqlite_test

import (
	"path/filepath"
	"testing"

	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{DSN: func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
	}})
}
