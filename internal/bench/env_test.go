package bench

import (
	"context"
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
