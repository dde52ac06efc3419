package sqlstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// inlineLiterals writes NULLs, integers, plain strings and whole-second
// UTC times into the statement, and leaves every other value a
// parameter, in order.
func TestInlineLiterals(t *testing.T) {
	sec := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	midnight := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	frac := sec.Add(1500 * time.Microsecond)
	local := sec.In(time.FixedZone("x", 3600))
	q, args := inlineLiterals("INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", []any{
		nil, int64(-9007199254740993), 42, "step_completed", `{"n":1,"a":[1,2]}`, "",
		"it's", `a\b`, "why?", "é", "tab\t", sec, midnight, frac,
	})
	assert.Equal(t, `INSERT INTO t VALUES (NULL,-9007199254740993,42,'step_completed','{"n":1,"a":[1,2]}','',?,?,?,?,?,'2026-11-29 01:02:03','2026-11-29',?)`, q)
	assert.Equal(t, []any{"it's", `a\b`, "why?", "é", "tab\t", frac}, args)

	q, args = inlineLiterals("UPDATE t SET a = ?, b = ?, c = ? WHERE id IN (?,?)", []any{local, []byte("x"), uint64(1), int64(7), int64(8)})
	assert.Equal(t, "UPDATE t SET a = ?, b = ?, c = ? WHERE id IN (7,8)", q)
	assert.Equal(t, []any{local, []byte("x"), uint64(1)}, args, "values of other types and zones stay parameters")

	q, args = inlineLiterals("SELECT ?", []any{1, 2})
	assert.Equal(t, "SELECT ?", q, "a statement whose markers do not match its arguments is left alone")
	assert.Equal(t, []any{1, 2}, args)

	q, args = inlineLiterals("SELECT 1", nil)
	assert.Equal(t, "SELECT 1", q)
	assert.Empty(t, args)

	year0 := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	_, args = inlineLiterals("SELECT ?", []any{year0})
	assert.Equal(t, []any{year0}, args, "a year the driver refuses stays a parameter, refused there")
}

// rowValues writes literals by inlineLiterals' rules, and without
// literals the placeholders and arguments the store passed before.
func TestRowValues(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 2, 3, 500, time.UTC)
	one, big := 1, int64(1)<<40
	write := func(literal bool) (string, []any) {
		tx := &txn{s: &Store{D: Dialect{Literals: literal, Time: func(t time.Time, _ bool) any { return t }}}}
		v := newRowValues(tx, "INSERT INTO t VALUES ", nil, 2, 0)
		for i := range 2 {
			v.row(i)
			v.int(big)
			v.id(0)
			v.smallInt(3)
			v.intp(&one)
			v.int64p(nil)
			v.str("step_completed")
			v.nullStr("")
			v.str("it's")
			v.text([]byte(`{"a":1}`))
			v.text(nil)
			v.text([]byte(`{"p":"a\/b"}`))
			v.sec(at)
			v.sec(time.Time{})
			v.end()
		}
		return v.b.String(), v.args
	}
	q, args := write(true)
	row := `(1099511627776,NULL,3,1,NULL,'step_completed',NULL,?,'{"a":1}',NULL,?,'2026-11-29 01:02:03',NULL)`
	assert.Equal(t, "INSERT INTO t VALUES "+row+","+row, q)
	assert.Equal(t, []any{"it's", `{"p":"a\/b"}`, "it's", `{"p":"a\/b"}`}, args)

	q, args = write(false)
	row = "(" + placeholders(13) + ")"
	assert.Equal(t, "INSERT INTO t VALUES "+row+","+row, q)
	sec := at.Truncate(time.Second)
	vals := []any{big, nil, 3, 1, nil, "step_completed", nil, "it's", `{"a":1}`, nil, `{"p":"a\/b"}`, sec, nil}
	assert.Equal(t, append(append([]any{}, vals...), vals...), args)
}

// rowsUpdate writes the values that have a literal as one, a []byte as
// a text (a string parameter without literals), and without literals
// the statement and arguments it wrote before.
func TestRowsUpdateLiterals(t *testing.T) {
	write := func(literal bool) (string, []any) {
		tx := &txn{s: &Store{D: Dialect{Literals: literal}}}
		states := [][]byte{[]byte(`{"a":1}`), []byte(`{"p":"a\/b"}`)}
		u := newRowsUpdate(tx, "w", []int64{7, 8}, []string{"status", "state"}, func(i, c int) any {
			if c == 0 {
				return "running"
			}
			return states[i]
		}, 0)
		u.b.WriteString(" AND ")
		u.column("state", func(i int) any { return states[1-i] }, "CAST(", " AS BINARY)")
		return u.b.String(), u.args
	}
	q, args := write(true)
	assert.Equal(t, `UPDATE w SET status = 'running', state = CASE id WHEN 7 THEN '{"a":1}' WHEN 8 THEN ? ELSE state END WHERE id IN (7,8)`+
		` AND CAST(state AS BINARY) = CAST(CASE id WHEN 7 THEN ? WHEN 8 THEN '{"a":1}' ELSE state END AS BINARY)`, q)
	assert.Equal(t, []any{`{"p":"a\/b"}`, `{"p":"a\/b"}`}, args)

	q, args = write(false)
	assert.Equal(t, `UPDATE w SET status = ?, state = CASE id WHEN ? THEN ? WHEN ? THEN ? ELSE state END WHERE id IN (?,?)`+
		` AND CAST(state AS BINARY) = CAST(CASE id WHEN ? THEN ? WHEN ? THEN ? ELSE state END AS BINARY)`, q)
	assert.Equal(t, []any{"running", int64(7), `{"a":1}`, int64(8), `{"p":"a\/b"}`, int64(7), int64(8),
		int64(7), `{"p":"a\/b"}`, int64(8), `{"a":1}`}, args)
}
