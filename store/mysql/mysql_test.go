package mysql_test

import (
	"testing"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{DSN: func(t *testing.T) string {
		dsn, _ := migrated.DSN(t)
		return dsn
	}})
}
