package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimOptions: the claim goes through the unnamed statement on a
// connection that keeps statements prepared, asks for its description
// every time when descriptions are not cached, and keeps an exec mode
// the connection string chose.
func TestClaimOptions(t *testing.T) {
	for dsn, want := range map[string][]any{
		"postgres://u@h/d": {pgx.QueryExecModeCacheDescribe},
		"postgres://u@h/d?description_cache_capacity=0":            {pgx.QueryExecModeDescribeExec},
		"postgres://u@h/d?default_query_exec_mode=simple_protocol": nil,
		"postgres://u@h/d?default_query_exec_mode=cache_describe":  nil,
	} {
		pc, err := pgx.ParseConfig(dsn)
		require.NoError(t, err)
		assert.Equal(t, want, claimOptions(pc), dsn)
	}
}
