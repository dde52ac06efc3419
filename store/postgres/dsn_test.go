package postgres_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/postgres"
)

// TestParseDSNReadsEveryPart: both schemes, the user information up to
// the last '@', defaults for host and port, and the store's parameters.
func TestParseDSNReadsEveryPart(t *testing.T) {
	c, err := postgres.ParseDSN("postgres://app:p@ss:w/rd?#x@db.local:6543/queue%20db?prefix=q_&schema=jobs&create=true&max_open_conns=8&sslmode=disable")
	require.NoError(t, err)
	assert.Equal(t, "app", c.User)
	assert.Equal(t, "p@ss:w/rd?#x", c.Password)
	assert.Equal(t, "db.local", c.Host)
	assert.Equal(t, 6543, c.Port)
	assert.Equal(t, "queue db", c.Database)
	assert.Equal(t, "q_", c.Prefix)
	assert.Equal(t, "jobs", c.Schema)
	assert.True(t, c.Create)
	assert.Equal(t, 8, c.MaxOpenConns)
	assert.Equal(t, map[string]string{"sslmode": "disable"}, c.Params)

	c, err = postgres.ParseDSN("postgresql://u:p%3Fw@/app")
	require.NoError(t, err)
	assert.Equal(t, "p?w", c.Password, "percent-encoded password")
	assert.Equal(t, "127.0.0.1", c.Host)
	assert.Equal(t, 5432, c.Port)
	assert.Equal(t, "", c.Prefix, "no prefix by default")
	assert.Equal(t, "", c.Schema)
	assert.Equal(t, 32, c.MaxOpenConns)

	c, err = postgres.ParseDSN("POSTGRES://u@[::1]:5433/app")
	require.NoError(t, err)
	assert.Equal(t, "::1", c.Host)
	assert.Equal(t, 5433, c.Port)
}

// TestParseDSNRejectsMalformedInput: a DSN that does not parse, or has a
// parameter the store does not know, is an error, never a silent
// fallback (a wrong prefix or schema points a worker at other tables).
func TestParseDSNRejectsMalformedInput(t *testing.T) {
	for _, dsn := range []string{
		"postgres://root@127.0.0.1:5432/db?prefix=abc_;x",
		"postgres://root@127.0.0.1:5432/db?prefix=%zz",
		"postgres://root@127.0.0.1:5432/db?prefix=a_&prefix=b_",
		"postgres://root@127.0.0.1:5432/db?prefix=abc-",
		"postgres://root@127.0.0.1:5432/db?schema=a-b",
		"postgres://root@127.0.0.1:5432/db?schema=1abc",
		"postgres://root@127.0.0.1:5432/db?schema=" + strings.Repeat("s", 64),
		"postgres://root@127.0.0.1:5432/db?max_open_conns=0",
		"postgres://root@127.0.0.1:5432/db?create=perhaps",
		"postgres://root@127.0.0.1:5432/db?busy_timeout=5",
		"postgres://root@127.0.0.1:5432/db?table_jobs=x",
		"postgres://root@127.0.0.1:5432/db?sslmode=sometimes",
		"postgres://root@127.0.0.1:5432/db?search_path=public",
		"postgres://root@127.0.0.1:5432/",
		"postgres://root@127.0.0.1:99999/db",
		"postgres://root@127.0.0.1:x/db",
		"postgres://root@::1/db",
		"postgres://root@[::1/db",
		"postgres://root@h1,h2/db",
		"postgres://root@127.0.0.1/db#frag",
		"mysql://root@127.0.0.1/db",
	} {
		_, err := postgres.ParseDSN(dsn)
		require.Error(t, err, "%s", dsn)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "%s", dsn)
	}
}

// TestParseDSNErrorsHideThePassword: whatever part of a DSN is wrong,
// the error does not show the password.
func TestParseDSNErrorsHideThePassword(t *testing.T) {
	const pw = "Sup3rSecretPw"
	for _, dsn := range []string{
		"postgres://u:" + pw + "@h/db?unknown=1",
		"postgres://u:" + pw + "@h/db?sslmode=" + pw,
		"postgres://u:" + pw + "@h:99x/db",
		"postgres://u:" + pw + "@h/",
		"postgres://u:" + pw + "@[::1/db",
		"postgres://u:" + pw + "@h/db?prefix=" + pw + "-",
	} {
		_, err := postgres.ParseDSN(dsn)
		require.Error(t, err, "%s", dsn)
		assert.NotContains(t, err.Error(), pw, "%s", dsn)
		assert.NotContains(t, err.Error(), pw[:6], "%s", dsn)
	}
}
