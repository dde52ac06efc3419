package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/queuety/queuety-go/store/storetest"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{DSN: func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
	}})
}
