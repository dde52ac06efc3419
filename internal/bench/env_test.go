package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestFreshKeepsTheDSNsSettings: the DSN of a fresh prefix keeps the
// base DSN's interpolateParams=false, without which a character set
// such as gbk would be refused.
func TestFreshKeepsTheDSNsSettings(t *testing.T) {
	env, err := EnvFor("root:pw@tcp(127.0.0.1:3306)/test?charset=gbk&interpolateParams=false")
	require.NoError(t, err)
	dsn, _, err := env.Fresh(context.Background())
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	assert.False(t, cfg.Driver.InterpolateParams)
	assert.Equal(t, "pw", cfg.Driver.Passwd)
}

// TestFreshKeepsTheIndexSet: the DSN of a fresh prefix keeps the base
// DSN's schema=lean, and the report's header names the index set.
func TestFreshKeepsTheIndexSet(t *testing.T) {
	env, err := EnvFor("mysql://root@127.0.0.1:3306/test?schema=lean")
	require.NoError(t, err)
	dsn, _, err := env.Fresh(context.Background())
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	assert.True(t, cfg.Lean, "schema=lean kept")

	var b strings.Builder
	(&Report{Store: "mysql", Server: "10.11", Schema: "lean", Jobs: 1, Runs: 1}).Format(&b)
	assert.Contains(t, b.String(), "store mysql (10.11, schema lean)")
}

// TestFreshCleanupOutlivesTheRun: a fresh prefix's tables are dropped
// even when the run's context is over by then (a timed or interrupted
// run).
func TestFreshCleanupOutlivesTheRun(t *testing.T) {
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	dsn, cleanup, err := env.Fresh(ctx)
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	db := testdb.Admin(t)
	_, err = db.Exec("CREATE TABLE `" + cfg.Prefix + "probe` (id INT PRIMARY KEY)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testdb.DropTables(db, cfg.Prefix) })
	cancel()
	cleanup()
	left, err := testdb.Tables(db, cfg.Prefix)
	require.NoError(t, err)
	assert.Empty(t, left, "tables left by the fresh prefix's cleanup")
}
