package driver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// TestOpenUnregisteredNamesThePackage: a DSN whose store is not imported
// is an error naming the package to import; both PostgreSQL schemes name
// store/postgres.
func TestOpenUnregisteredNamesThePackage(t *testing.T) {
	for dsn, pkg := range map[string]string{
		"postgres://u:p@h/db":   "store/postgres",
		"postgresql://u:p@h/db": "store/postgres",
		"sqlite://x.db":         "store/sqlite",
	} {
		_, err := driver.Open(context.Background(), dsn)
		require.Error(t, err, dsn)
		assert.Contains(t, err.Error(), `import _ "github.com/queuety/queuety-go/`+pkg+`"`, dsn)
	}
}
