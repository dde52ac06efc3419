package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestHeldJournalInsertWithALostReplyLeavesNoRow: the server writes and
// commits a held claim's journal row, but the client loses its connection
// before the reply (a proxy drops it), so the claim fails and no handler
// runs held. The row must not outlive the failed claim: stale recovery,
// past the row's expiry, counts no attempt for the jobs, which stay
// pending with no attempt.
func TestHeldJournalInsertWithALostReplyLeavesNoRow(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	err := e.claimJournalLost(t, quiet())
	require.NotErrorIs(t, err, driver.ErrHeldJournalLeft)
	e.waitStatus(t, "pending", ids...)

	assert.Zero(t, e.journalRows(t), "journal rows after the failed claim")
	assert.Zero(t, e.sweepLater(t, 10*time.Minute), "jobs taken back past the row's expiry")
	for _, id := range ids {
		s, att, _ := e.row(t, id)
		assert.Equal(t, "pending", s)
		assert.Equal(t, 0, att, "no attempt counted: no handler ran")
	}
}

// claimJournalLost holds a claim of e's "held" jobs through a proxy that
// drops the server's reply to the journal row's INSERT (and closes the
// connection), and returns the claim's error, once the server has
// answered that INSERT with OK.
func (e *holdEnv) claimJournalLost(t *testing.T, log *slog.Logger) error {
	t.Helper()
	ctx := context.Background()
	const server = "127.0.0.1:3306"
	require.Contains(t, e.dsn, server)
	p := testdb.NewStatementProxy(t, server, false)
	dropped := p.DropReply(func(q string) bool {
		return strings.HasPrefix(q, "INSERT INTO ") && strings.Contains(q, "go_held_claims")
	})
	cfg, err := mysql.ParseDSN(strings.Replace(e.dsn, server, p.Addr, 1))
	require.NoError(t, err)
	s, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	eng := engine.New(s, engine.Config{Logger: log})
	require.True(t, eng.CanHold())
	h, err := eng.ClaimHeld(ctx, engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"held"}, Limit: 10},
		engine.HeldParams{Bound: 5 * time.Second, Idle: 10 * time.Second})
	require.Error(t, err, "the held claim whose journal row's reply was lost")
	require.Nil(t, h)
	require.True(t, receive(t, dropped, "the journal insert's dropped reply"), "the server wrote the journal row")
	return err
}

// TestHeldJournalRowLeftWhenItsDeleteFailsToo: when the delete of a
// journal row whose INSERT reply was lost fails too (here a trigger
// refuses it), the claim's error says so, the engine logs a warning, and
// the row is left: past its expiry stale recovery counts an attempt for
// its jobs, as for a dead process's held transaction.
func TestHeldJournalRowLeftWhenItsDeleteFailsToo(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	journal := strings.TrimSuffix(e.jobs, "jobs") + "go_held_claims"
	trigger := strings.TrimSuffix(e.jobs, "jobs") + "refuse_journal_delete"
	_, err := e.admin.Exec("CREATE TRIGGER " + trigger + " BEFORE DELETE ON " + journal +
		" FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'journal delete refused'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec("DROP TRIGGER IF EXISTS " + trigger) })
	var logged strings.Builder
	err = e.claimJournalLost(t, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.ErrorIs(t, err, driver.ErrHeldJournalLeft)
	assert.Contains(t, err.Error(), "journal delete refused")
	assert.Contains(t, logged.String(), "held claim journal row may be left")
	e.waitStatus(t, "pending", ids...)
	require.Equal(t, 1, e.journalRows(t), "the row left")

	_, err = e.admin.Exec("DROP TRIGGER " + trigger)
	require.NoError(t, err)
	assert.Equal(t, 2, e.sweepLater(t, 10*time.Minute), "jobs taken back past the row's expiry")
	for _, id := range ids {
		_, att, _ := e.row(t, id)
		assert.Equal(t, 1, att, "an attempt counted")
	}
	assert.Zero(t, e.journalRows(t))
}
