package sqlstore

import (
	"strings"
)

// A batch's multi-row statements have as many rows as the batch: an
// INSERT of a step's events, log rows or next jobs writes a placeholder
// for every value, and a completion's "id IN (...)" one for every job. On
// PostgreSQL each row count is then a statement of its own text, which
// the driver prepares on the connection the first time it meets it (a
// parse) and the server plans at nearly every execution, and the plan of
// a VALUES list of a hundred rows of nineteen columns is built, and its
// expressions simplified, value by value: a batch's statements rarely
// repeat a row count often enough for the server to settle on a generic
// plan. Where the dialect asks for it (Dialect.Arrays), the rows go as
// one array a column,
//
//	INSERT INTO t (a, b) SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]))
//
// and id lists as "id = ANY(CAST(? AS BIGINT[]))": one text whatever the
// row count, parsed once a connection, planned in a time that does not
// grow with the rows. The rows are inserted in the arrays' order, so
// RETURNING gives their ids in the order of the rows, as it does for a
// VALUES list.

// newRowArrays is newRowValues for a dialect that passes arrays: head
// ends in "VALUES ", which the unnest of one array a column, of the
// types types, replaces.
func newRowArrays(t *txn, head string, types []string, rows int) *rowValues {
	v := &rowValues{t: t, cols: make([][]any, len(types))}
	for i := range v.cols {
		v.cols[i] = make([]any, 0, rows)
	}
	v.b.WriteString(strings.TrimSuffix(head, "VALUES "))
	v.b.WriteString("SELECT * FROM unnest(")
	for i, typ := range types {
		if i > 0 {
			v.b.WriteString(", ")
		}
		v.b.WriteString("CAST(? AS " + typ + "[])")
	}
	v.b.WriteByte(')')
	return v
}

// idsIn returns the condition that col is one of ids, and its arguments:
// "col IN (?, ...)", or, where the dialect passes arrays
// (Dialect.Arrays), "col = ANY(...)" of one array. padded pads the list
// as inIDs pads it.
func (t *txn) idsIn(col string, ids []int64, padded bool) (string, []any) {
	switch {
	case t.s.D.Arrays:
		return col + " = ANY(CAST(? AS BIGINT[]))", []any{ids}
	case padded:
		in, args := t.inIDs(ids)
		return col + " IN (" + in + ")", args
	}
	return col + " IN (" + placeholders(len(ids)) + ")", idArgs(ids)
}
