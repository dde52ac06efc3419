package sqlstore

import (
	"context"
	"database/sql"
	"net"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/migrate"
)

// TestProbeDueTablesKeepsWhatItKnewWhenTheServerIsUnreachable: a look
// for the newest tables whose statements never reach the server (here
// a port that refuses connections, as a server that went away does)
// leaves the store's knowledge of them as it was: tables it knew to be
// there are not left out of the maintenance read, nor held claims turned
// off, by a network blip; tables it knew to be missing stay so.
func TestProbeDueTablesKeepsWhatItKnewWhenTheServerIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	db, err := sql.Open("mysql", "root@tcp("+addr+")/test?timeout=2s")
	require.NoError(t, err)
	defer db.Close()
	s := New(db, Dialect{Hold: &HoldSession{Set: "SET SESSION idle_transaction_timeout = %d"}}, "wp_", driver.StoreInfo{}, migrate.Migrations{})
	ctx := context.Background()

	p := s.probeDueTables(ctx)
	assert.False(t, p.missing(), "tables known to be there, looked for in vain: %+v", p)

	s.due.set(dueParts{noTimers: true, noWorkers: true, noHeld: true})
	p = s.probeDueTables(ctx)
	assert.True(t, p.noTimers && p.noWorkers && p.noHeld, "tables known to be missing: %+v", p)
}
