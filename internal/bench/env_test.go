package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
