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
