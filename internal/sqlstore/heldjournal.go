package sqlstore

// This file holds the journal of held transactions (driver.HeldClaimer's
// JournalHeld, driver.HeldJournalTx): one row a held transaction, naming
// its jobs, written and committed before their handlers run and deleted
// once the transaction has ended with an outcome its process knows. A row
// left behind is a held transaction whose process died: stale recovery
// counts an attempt for its jobs. So a row whose INSERT failed on the
// client, though the server may have written it, is deleted by its
// content (JournalHeld).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// heldJournalDropTimeout bounds the delete of a journal row whose INSERT
// failed (JournalHeld).
const heldJournalDropTimeout = 5 * time.Second

// heldLeftMax is how many journal rows of failed INSERTs a store keeps to
// delete again, and heldLeftTries how many more deletes each gets.
const (
	heldLeftMax   = 64
	heldLeftTries = 3
)

// heldLeft holds the journal rows, by content, whose INSERT failed and
// whose delete failed or found nothing: the server may still write them
// (an INSERT on its way) or keep them (a failed delete). The next journal
// row written deletes them again.
type heldLeft struct {
	mu   sync.Mutex
	rows []heldLeftRow
}

// heldLeftRow is a journal row's content, as JournalHeld bound it.
type heldLeftRow struct {
	jobs  string
	at    any
	tries int
}

// add keeps r, forgetting the oldest row past heldLeftMax.
func (l *heldLeft) add(r heldLeftRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, r)
	if n := len(l.rows) - heldLeftMax; n > 0 {
		l.rows = append(l.rows[:0], l.rows[n:]...)
	}
}

// take removes and returns the rows kept.
func (l *heldLeft) take() []heldLeftRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.rows
	l.rows = nil
	return out
}

// JournalHeld implements driver.HeldClaimer: one INSERT on the pool, in
// autocommit. An INSERT the server refused wrote nothing. One that failed
// on the way (the connection lost while the reply was on its way, ctx
// ended) may have committed all the same, and that row would count an
// attempt for jobs whose handlers never ran once it expires: it deletes
// the row by its content, on a context of its own. The text of jobs (ids
// with their attempts before the claim) with the expiry, to the
// microsecond, is no other live row's: a job is held by one transaction
// at a time, and a row of a dead transaction that named the same attempts
// expired at an earlier time. The DELETE finds a row the INSERT wrote,
// committed or not (it waits for an uncommitted one's lock), and misses
// an INSERT the server has not yet begun to run; so when it deletes
// nothing, or fails, the row is deleted again after the next journal row
// is written (dropLeft). The success path costs the INSERT alone, and
// one DELETE more after a failed one.
func (s *Store) JournalHeld(ctx context.Context, jobs []driver.HeldJob, expires time.Time) (int64, error) {
	text, at := formatHeldJobs(jobs), s.D.Time(expires.UTC(), true)
	res, err := s.DB.ExecContext(ctx, "INSERT INTO "+s.T.HeldClaims+" (jobs, expires_at) VALUES (?, ?)", text, at)
	var id int64
	switch {
	case err == nil:
		if id, err = res.LastInsertId(); err == nil {
			s.dropLeft(ctx, id)
			return id, nil
		}
		err = fmt.Errorf("id: %w", err) // written, its id unknown
	case !unreached(ctx, err):
		// Refused: nothing written. An older schema may lack the table.
		if p := s.probeDueTables(ctx); p.noHeld {
			s.due.set(p) // no more held claims until the table is there
		}
		return 0, fmt.Errorf("held claim journal: %w", err)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heldJournalDropTimeout)
	defer cancel()
	res, derr := s.DB.ExecContext(dctx, "DELETE FROM "+s.T.HeldClaims+" WHERE jobs = ? AND expires_at = ?", text, at)
	if derr == nil {
		if n, nerr := res.RowsAffected(); nerr != nil || n == 0 {
			s.heldLeft.add(heldLeftRow{jobs: text, at: at})
		}
		return 0, fmt.Errorf("held claim journal: %w", err)
	}
	s.heldLeft.add(heldLeftRow{jobs: text, at: at})
	return 0, fmt.Errorf("held claim journal: %w (%w: %w)", err, driver.ErrHeldJournalLeft, derr)
}

// dropLeft deletes again, best effort, the journal rows whose INSERT
// failed (JournalHeld) and that may be there, never the row just written
// (a clock that stands still could give it the same content): one
// DELETE, when there are any. A row whose delete fails is kept for
// heldLeftTries more.
func (s *Store) dropLeft(ctx context.Context, written int64) {
	rows := s.heldLeft.take()
	if len(rows) == 0 {
		return
	}
	q := make([]string, len(rows))
	args := make([]any, 0, 2*len(rows)+1)
	args = append(args, written)
	for i, r := range rows {
		q[i] = "(jobs = ? AND expires_at = ?)"
		args = append(args, r.jobs, r.at)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heldJournalDropTimeout)
	defer cancel()
	if _, err := s.DB.ExecContext(dctx, "DELETE FROM "+s.T.HeldClaims+" WHERE id <> ? AND ("+strings.Join(q, " OR ")+")", args...); err != nil {
		for _, r := range rows {
			if r.tries++; r.tries <= heldLeftTries {
				s.heldLeft.add(r)
			}
		}
	}
}

// EndHeldJournal implements driver.HeldClaimer.
func (s *Store) EndHeldJournal(ctx context.Context, id int64) error {
	if _, err := s.DB.ExecContext(ctx, "DELETE FROM "+s.T.HeldClaims+" WHERE id = ?", id); err != nil {
		return fmt.Errorf("held claim journal: delete: %w", err)
	}
	return nil
}

// HeldJournalExpired implements driver.HeldJournalTx.
func (t *txn) HeldJournalExpired(ctx context.Context, now time.Time, limit int) ([]driver.HeldJournal, error) {
	scan := func(r scanner) (driver.HeldJournal, error) {
		var j driver.HeldJournal
		var jobs string
		if err := r.Scan(&j.ID, &jobs); err != nil {
			return j, err
		}
		var err error
		j.Jobs, err = parseHeldJobs(jobs)
		return j, err
	}
	if t.s.due.get().noHeld {
		return nil, nil
	}
	out, err := queryAll(ctx, t.tx, scan, "SELECT id, jobs FROM "+t.s.T.HeldClaims+" WHERE expires_at <= ? ORDER BY expires_at, id LIMIT ?"+t.s.D.SkipLocked,
		t.frac(now), limit)
	if err != nil && ctx.Err() == nil {
		// A store opened without migrating on an older schema has no
		// journal, and so no held claims to recover.
		if p := t.s.probeDueTables(ctx); p.noHeld {
			t.s.due.set(p)
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("held claim journal: expired rows: %w", err)
	}
	return out, nil
}

// HeldJournalDelete implements driver.HeldJournalTx and driver.HeldTx.
func (t *txn) HeldJournalDelete(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.HeldClaims+" WHERE id IN ("+placeholders(len(ids))+")", idArgs(ids)...); err != nil {
		return fmt.Errorf("held claim journal: delete: %w", err)
	}
	return nil
}

// formatHeldJobs writes jobs as "id:attempts" pairs separated by commas.
func formatHeldJobs(jobs []driver.HeldJob) string {
	var b strings.Builder
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(j.ID, 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(j.Attempts))
	}
	return b.String()
}

// parseHeldJobs reads formatHeldJobs's text.
func parseHeldJobs(s string) ([]driver.HeldJob, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]driver.HeldJob, 0, len(parts))
	for _, p := range parts {
		id, att, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("held claim journal: bad entry %q", p)
		}
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("held claim journal: bad job id %q: %w", id, err)
		}
		a, err := strconv.Atoi(att)
		if err != nil {
			return nil, fmt.Errorf("held claim journal: bad attempts %q: %w", att, err)
		}
		out = append(out, driver.HeldJob{ID: n, Attempts: a})
	}
	return out, nil
}
