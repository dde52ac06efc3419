package sqlstore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestMaintenanceDueFindsTablesMigratedLater: a store opened on tables
// that lack the newest ones (the state-machine timers and the worker
// registry, as an older release left them) reads when the sweeps are due
// without them; once they appear (another process migrated), its next
// look for them (every dueReprobe) puts them back in the read, so a
// machine timer due in the new table is seen.
func TestMaintenanceDueFindsTablesMigratedLater(t *testing.T) {
	defer sqlstore.SetDueReprobe(time.Hour)()
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	open := func() *mysql.Store {
		s, err := driver.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s.(*mysql.Store)
	}
	require.NoError(t, open().Migrate(ctx))
	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	timers, workers := prefix+"queuety_go_machine_timers", prefix+"queuety_go_workers"
	_, err = admin.ExecContext(ctx, "RENAME TABLE "+timers+" TO "+timers+"_later, "+workers+" TO "+workers+"_later")
	require.NoError(t, err)
	s := open()
	d, err := s.MaintenanceDue(ctx)
	require.NoError(t, err, "read without the newest tables")
	assert.True(t, d.MachineTimer.IsZero())

	_, err = admin.ExecContext(ctx, "RENAME TABLE "+timers+"_later TO "+timers+", "+workers+"_later TO "+workers)
	require.NoError(t, err)
	fireAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err = admin.ExecContext(ctx, "INSERT INTO "+prefix+"queuety_go_machine_timers (machine_id, state_name, entry_event_id, event, fire_at)"+
		" VALUES (1, 'waiting', 1, 'timeout', ?)", fireAt)
	require.NoError(t, err)

	d, err = s.MaintenanceDue(ctx)
	require.NoError(t, err)
	assert.True(t, d.MachineTimer.IsZero(), "the missing tables are not looked for again before dueReprobe")

	sqlstore.SetDueReprobe(0)
	d, err = s.MaintenanceDue(ctx)
	require.NoError(t, err)
	assert.True(t, d.MachineTimer.Equal(fireAt), "the timer in the table migrated later: got %v", d.MachineTimer)
}
