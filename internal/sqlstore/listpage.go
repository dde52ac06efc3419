package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/queuety/queuety-go/store/driver"
)

// pageSQL builds the statements of one list page: the conditions an index
// serves (with the keyset's), and the residual ones checked on a bounded
// window of candidates.
type pageSQL struct {
	table, cols  string
	conds, resid []string
	args, rargs  []any
	limit, scan  int
	asc          bool
	order        string
}

func newPageSQL(table, cols string, k driver.Keyset) *pageSQL {
	p := &pageSQL{table: table, cols: cols, asc: k.Ascending(), order: " ORDER BY id DESC"}
	p.limit, p.scan = k.Bounds()
	if p.asc {
		p.order = " ORDER BY id"
	}
	switch {
	case k.AfterID != 0:
		p.add("id > ?", k.AfterID)
	case k.BeforeID != 0 && !k.Oldest:
		p.add("id < ?", k.BeforeID)
	}
	return p
}

func (p *pageSQL) add(cond string, v any) { p.conds, p.args = append(p.conds, cond), append(p.args, v) }

func (p *pageSQL) residual(cond string, v ...any) {
	p.resid, p.rargs = append(p.resid, cond), append(p.rargs, v...)
}

func (p *pageSQL) where() string {
	if len(p.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(p.conds, " AND ")
}

// window is the bounded set of candidate ids: the first scan rows the
// indexed conditions select, from the page's end of the list.
func (p *pageSQL) window() string {
	return "SELECT id FROM " + p.table + p.where() + p.order + " LIMIT " + fmt.Sprint(p.scan)
}

// rowsQuery is the statement that reads the page's rows.
func (p *pageSQL) rowsQuery() (string, []any) {
	if len(p.resid) == 0 {
		return "SELECT " + p.cols + " FROM " + p.table + p.where() + p.order + " LIMIT ?", append(slices.Clone(p.args), p.limit)
	}
	// The window drives the join: the statement reads at most scan index
	// entries and looks each one's row up by id, whatever the plan of the
	// conditions on the row.
	order := " ORDER BY r.id DESC"
	if p.asc {
		order = " ORDER BY r.id"
	}
	q := "SELECT " + qualify("r", p.cols) + " FROM (" + p.window() + ") w JOIN " + p.table + " r ON r.id = w.id WHERE " +
		strings.Join(p.resid, " AND ") + order + " LIMIT ?"
	args := append(slices.Clone(p.args), p.rargs...)
	return q, append(args, p.limit)
}

// qualify prefixes each column of a select list with a table alias
// (NULL stays NULL).
func qualify(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		c = strings.TrimSpace(c)
		if c != "NULL" {
			c = alias + "." + c
		}
		parts[i] = c
	}
	return strings.Join(parts, ", ")
}

// scanEnd returns, for a page with residual conditions that came back
// short, the id of the last candidate of a window that was full (0 when
// the window held every candidate, so nothing was left unread).
func (t *txn) pageScanEnd(ctx context.Context, p *pageSQL, got int) (int64, error) {
	if len(p.resid) == 0 || got >= p.limit {
		return 0, nil
	}
	agg := "MIN"
	if p.asc {
		agg = "MAX"
	}
	var n, end int64
	err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE("+agg+"(id), 0) FROM ("+p.window()+") w", p.args...).Scan(&n, &end)
	if err != nil {
		return 0, fmt.Errorf("page scan end: %w", err)
	}
	if n < int64(p.scan) {
		return 0, nil
	}
	return end, nil
}

// likeContains makes s a LIKE pattern that matches it anywhere, with "!"
// as the escape character (ESCAPE '!').
func likeContains(s string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return "%" + r.Replace(s) + "%"
}

// notPrefix is the condition that col does not begin with the text of
// its placeholder, compared byte for byte as Go's strings.HasPrefix does,
// on every store: MySQL's collations and SQLite's LIKE ignore ASCII case,
// PostgreSQL's LIKE does not, so LIKE would make the stores disagree. The
// prefix's length is fixed: driver.InternalHandlerPrefix.
func (s *Store) notPrefix(col string) string {
	head := fmt.Sprintf("SUBSTR(%s, 1, %d)", col, len(driver.InternalHandlerPrefix))
	if s.D.Name == "mysql" {
		return "CAST(" + head + " AS BINARY) <> CAST(? AS BINARY)"
	}
	return head + " <> ?"
}

// jsonEscaped is s as JSON text escapes it the way PHP's json_encode
// writes payloads by default: a slash as \/, and every character beyond
// ASCII as \uXXXX (two of them for one beyond the BMP).
func jsonEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// asciiLower lowers the ASCII letters of s only, as every database's
// LOWER does (SQLite's lowers no other letter).
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// JobPage implements driver.Tx.
func (t *txn) JobPage(ctx context.Context, q driver.JobPageQuery) (*driver.Page[*driver.Job], error) {
	p := newPageSQL(t.s.T.Jobs, jobColsWithoutPayload, q.Page)
	if q.ID != 0 {
		p.add("id = ?", q.ID)
	}
	if q.Queue != "" {
		p.add("queue = ?", q.Queue)
	}
	if q.Status != "" {
		p.add("status = ?", string(q.Status))
	}
	if q.Handler != "" {
		p.add("handler = ?", q.Handler)
	}
	if q.WorkflowID != 0 {
		p.add("workflow_id = ?", q.WorkflowID)
	}
	if !q.CreatedFrom.IsZero() {
		p.residual("created_at >= ?", t.sec(q.CreatedFrom))
	}
	if !q.CreatedTo.IsZero() {
		p.residual("created_at < ?", t.sec(q.CreatedTo))
	}
	if q.PayloadContains != "" {
		// LOWER on both sides: ASCII case is ignored in every database,
		// whatever the column's collation.
		text := asciiLower(q.PayloadContains)
		if esc := jsonEscaped(text); esc != text {
			p.residual("(LOWER(payload) LIKE ? ESCAPE '!' OR LOWER(payload) LIKE ? ESCAPE '!')", likeContains(text), likeContains(asciiLower(esc)))
		} else {
			p.residual("LOWER(payload) LIKE ? ESCAPE '!'", likeContains(text))
		}
	}
	if q.HideInternal {
		p.residual(t.s.notPrefix("handler"), driver.InternalHandlerPrefix)
	}
	sq, args := p.rowsQuery()
	rows, err := t.queryJobs(ctx, sq, args...)
	if err != nil {
		return nil, fmt.Errorf("job page: %w", err)
	}
	end, err := t.pageScanEnd(ctx, p, len(rows))
	if err != nil {
		return nil, err
	}
	if p.asc {
		slices.Reverse(rows)
	}
	return &driver.Page[*driver.Job]{Rows: rows, ScanEnd: end}, nil
}

// WorkflowPage implements driver.Tx.
func (t *txn) WorkflowPage(ctx context.Context, q driver.WorkflowPageQuery) (*driver.Page[*driver.Workflow], error) {
	p := newPageSQL(t.s.T.Workflows, workflowColsWithoutState, q.Page)
	if q.ID != 0 {
		p.add("id = ?", q.ID)
	}
	if q.Status != "" {
		p.add("status = ?", string(q.Status))
	}
	if q.Name != "" {
		p.add("name = ?", q.Name)
	}
	if !q.StartedFrom.IsZero() {
		p.residual("started_at >= ?", t.sec(q.StartedFrom))
	}
	if !q.StartedTo.IsZero() {
		p.residual("started_at < ?", t.sec(q.StartedTo))
	}
	sq, args := p.rowsQuery()
	rows, err := t.queryWorkflows(ctx, sq, args...)
	if err != nil {
		return nil, fmt.Errorf("workflow page: %w", err)
	}
	end, err := t.pageScanEnd(ctx, p, len(rows))
	if err != nil {
		return nil, err
	}
	if p.asc {
		slices.Reverse(rows)
	}
	return &driver.Page[*driver.Workflow]{Rows: rows, ScanEnd: end}, nil
}

// MachinePage implements driver.Tx.
func (t *txn) MachinePage(ctx context.Context, q driver.MachinePageQuery) (*driver.Page[*driver.Machine], error) {
	p := newPageSQL(t.s.T.StateMachines, machineListCols+", NULL, definition", q.Page)
	if q.Status != "" {
		p.add("status = ?", string(q.Status))
	}
	if q.Name != "" {
		p.add("name = ?", q.Name)
	}
	sq, args := p.rowsQuery()
	rows, err := queryAll(ctx, t.tx, scanMachine(true), sq, args...)
	if err != nil {
		return nil, fmt.Errorf("state machine page: %w", err)
	}
	if p.asc {
		slices.Reverse(rows)
	}
	return &driver.Page[*driver.Machine]{Rows: rows}, nil
}
