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

// journalInsert matches the INSERT of a held claim's journal row.
func journalInsert(q string) bool {
	return strings.HasPrefix(q, "INSERT INTO ") && strings.Contains(q, "go_held_claims")
}

// heldProxy is a proxy in front of the test server, and e's DSN through
// it.
func (e *holdEnv) heldProxy(t *testing.T) (*testdb.StatementProxy, string) {
	t.Helper()
	const server = "127.0.0.1:3306"
	require.Contains(t, e.dsn, server)
	p := testdb.NewStatementProxy(t, server, false)
	return p, strings.Replace(e.dsn, server, p.Addr, 1)
}

// heldEngine opens an engine on dsn that can hold claims.
func heldEngine(t *testing.T, dsn string, log *slog.Logger) *engine.Engine {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	s, err := mysql.OpenConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	eng := engine.New(s, engine.Config{Logger: log})
	require.True(t, eng.CanHold())
	return eng
}

// holdAll holds a claim of every "held" job.
func holdAll(eng *engine.Engine) (*engine.Held, error) {
	return eng.ClaimHeld(context.Background(), engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"held"}, Limit: 10},
		engine.HeldParams{Bound: 5 * time.Second, Idle: 10 * time.Second})
}

// noAttemptCounted checks that ids are pending with no attempt and stay
// so through stale recovery past any journal row's expiry, with no
// journal row left.
func (e *holdEnv) noAttemptCounted(t *testing.T, ids []int64) {
	t.Helper()
	assert.Zero(t, e.journalRows(t), "journal rows")
	assert.Zero(t, e.sweepLater(t, 10*time.Minute), "jobs taken back past the rows' expiry")
	for _, id := range ids {
		s, att, _ := e.row(t, id)
		assert.Equal(t, "pending", s)
		assert.Equal(t, 0, att, "no attempt counted: no handler ran")
	}
}

// nextHeldClaimDeletesTheRow holds the jobs ids again with eng, whose
// journal row is then the only one (the write deleted the row a failed
// write left), and rolls the claim back.
func (e *holdEnv) nextHeldClaimDeletesTheRow(t *testing.T, eng *engine.Engine, ids []int64) {
	t.Helper()
	h, err := holdAll(eng)
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Len(t, h.Jobs, len(ids))
	assert.Equal(t, 1, e.journalRows(t), "the live claim's row alone")
	assert.False(t, h.Rollback())
	e.noAttemptCounted(t, ids)
}

// TestHeldJournalInsertWithALostReplyLeavesNoRow: the server writes and
// commits a held claim's journal row, but the client loses its connection
// before the reply (a proxy drops it), so the claim fails and no handler
// runs held. The row must not outlive the failed claim: stale recovery,
// past the row's expiry, counts no attempt for the jobs, which stay
// pending with no attempt.
func TestHeldJournalInsertWithALostReplyLeavesNoRow(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	p, dsn := e.heldProxy(t)
	dropped := p.DropReply(journalInsert)
	h, err := holdAll(heldEngine(t, dsn, quiet()))
	require.Error(t, err, "the held claim whose journal row's reply was lost")
	require.Nil(t, h)
	require.True(t, receive(t, dropped, "the journal insert's dropped reply"), "the server wrote the journal row")
	require.NotErrorIs(t, err, driver.ErrHeldJournalLeft)
	e.noAttemptCounted(t, ids)
}

// TestHeldJournalInsertThatArrivesLateIsDeletedByTheNextClaim: the
// client loses its connection before the journal row's INSERT reaches the
// server, which runs it only after the failed claim's delete found
// nothing. The next journal row the store writes deletes it again, so
// stale recovery counts no attempt for the jobs.
func TestHeldJournalInsertThatArrivesLateIsDeletedByTheNextClaim(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	p, dsn := e.heldProxy(t)
	release, replied := p.CutBefore(t, journalInsert)
	eng := heldEngine(t, dsn, quiet())
	h, err := holdAll(eng)
	require.Error(t, err, "the held claim whose journal row's connection was lost")
	require.Nil(t, h)
	require.NotErrorIs(t, err, driver.ErrHeldJournalLeft)
	require.Zero(t, e.journalRows(t), "the INSERT not on the server yet")
	release()
	require.True(t, receive(t, replied, "the late journal insert's reply"), "the server wrote the journal row")
	require.Equal(t, 1, e.journalRows(t), "the late row")
	e.nextHeldClaimDeletesTheRow(t, eng, ids)
}

// TestHeldJournalRowLeftWhenItsDeleteFailsToo: when the delete of a
// journal row whose INSERT reply was lost fails too (here a trigger
// refuses it), the claim's error says so, the engine logs a warning, and
// the row is left until the store writes its next journal row, which
// deletes it again.
func TestHeldJournalRowLeftWhenItsDeleteFailsToo(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	journal := strings.TrimSuffix(e.jobs, "jobs") + "go_held_claims"
	trigger := strings.TrimSuffix(e.jobs, "jobs") + "refuse_journal_delete"
	_, err := e.admin.Exec("CREATE TRIGGER " + trigger + " BEFORE DELETE ON " + journal +
		" FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'journal delete refused'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec("DROP TRIGGER IF EXISTS " + trigger) })
	p, dsn := e.heldProxy(t)
	dropped := p.DropReply(journalInsert)
	var logged strings.Builder
	eng := heldEngine(t, dsn, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
	h, err := holdAll(eng)
	require.Error(t, err)
	require.Nil(t, h)
	require.True(t, receive(t, dropped, "the journal insert's dropped reply"), "the server wrote the journal row")
	require.ErrorIs(t, err, driver.ErrHeldJournalLeft)
	assert.Contains(t, err.Error(), "journal delete refused")
	assert.Contains(t, logged.String(), "held claim journal row may be left")
	e.waitStatus(t, "pending", ids...)
	require.Equal(t, 1, e.journalRows(t), "the row left")

	_, err = e.admin.Exec("DROP TRIGGER " + trigger)
	require.NoError(t, err)
	e.nextHeldClaimDeletesTheRow(t, eng, ids)
}

// TestHeldJournalInsertRefusedLeavesNothingToDelete: a journal INSERT the
// server refuses (here its table is gone, as on an older schema opened
// without migrating) wrote no row, so the claim fails without saying a
// row may be left and without a warning, and its jobs stay pending with
// no attempt.
func TestHeldJournalInsertRefusedLeavesNothingToDelete(t *testing.T) {
	e := newHoldEnv(t)
	ids := e.dispatchHeld(t, 2)
	var logged strings.Builder
	eng := heldEngine(t, e.dsn, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
	journal := strings.TrimSuffix(e.jobs, "jobs") + "go_held_claims"
	_, err := e.admin.Exec("RENAME TABLE " + journal + " TO " + journal + "_away")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec("RENAME TABLE " + journal + "_away TO " + journal) })

	h, err := holdAll(eng)
	require.Error(t, err, "the held claim whose journal table is gone")
	require.Nil(t, h)
	assert.NotErrorIs(t, err, driver.ErrHeldJournalLeft)
	assert.NotContains(t, logged.String(), "may be left")
	e.waitStatus(t, "pending", ids...)
	for _, id := range ids {
		_, att, _ := e.row(t, id)
		assert.Equal(t, 0, att, "no attempt counted: no handler ran")
	}
}
