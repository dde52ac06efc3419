package interop_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// rule says how one column of a PHP row is compared with the Go row.
type rule int

const (
	exact     rule = iota // the same stored text, or both NULL
	jsonValue             // both NULL, or equal as parsed JSON values
	nullness              // both NULL or both set (times, durations, traces)
	goNull                // the Go row has NULL whatever PHP wrote (a documented difference)
	state                 // workflow state: see compareState
	errorDoc              // workflow_events.error: message and class exact, trace only set or not
	ignored               // ids of log and event rows, created_at of log and event rows
)

// specs say what matters per table. A PHP column without a rule is
// compared exactly, except DATETIME columns (only NULL or not).
var specs = map[string]map[string]rule{
	"queuety_jobs": {
		"available_at": nullness, "reserved_at": nullness, "completed_at": nullness, "failed_at": nullness,
		"created_at": nullness, "heartbeat_data": jsonValue,
	},
	"queuety_workflows": {
		"state": state, "started_at": nullness, "completed_at": nullness, "failed_at": nullness, "deadline_at": nullness,
	},
	"queuety_logs": {
		"id": ignored, "created_at": ignored, "duration_ms": nullness, "error_trace": nullness, "context": jsonValue,
		// Go has no per-job memory peak (goroutines share one heap), so it
		// writes NULL; PHP's admission control treats NULL as no profile.
		"memory_peak_kb": goNull,
	},
	"queuety_workflow_events": {
		"id": ignored, "created_at": ignored, "duration_ms": nullness,
		"input": jsonValue, "output": jsonValue, "state_before": jsonValue, "state_after": jsonValue,
		"context": jsonValue, "artifacts": jsonValue, "chunks": jsonValue, "error": errorDoc,
	},
	"queuety_signals": {"received_at": nullness},
}

func ruleFor(table, col string) rule {
	if r, ok := specs[table][col]; ok {
		return r
	}
	if strings.HasSuffix(col, "_at") || col == "next_run" || col == "last_run" {
		return nullness
	}
	return exact
}

// compareOption changes what compareWith checks.
type compareOption int

const (
	// logsJobsInAnyOrder drops one check of the log rows: that the rows
	// other than 'started' are in PHP's order across jobs. Every row and
	// every column is still compared, each job's rows in PHP's order. A
	// worker writes a failed attempt's rows before it takes the next job,
	// but hands a successful attempt to its completer, which records it
	// while the next job already runs; so when one job succeeds and the
	// next one taken fails, their rows land in either order. A test that
	// uses this option asserts the order in which the jobs ran instead.
	logsJobsInAnyOrder compareOption = iota + 1
)

// cmp compares one snapshot of PHP's rows with the Go database.
type cmp struct {
	e *env
	// anyJobOrder is set by logsJobsInAnyOrder.
	anyJobOrder bool
	// before is the state each workflow had in the snapshot loaded last, by
	// workflow id; its keys must keep their order in the Go state.
	before map[string][]string
	// loadedLogs are the ids of the log rows PHP wrote that were loaded
	// into the database; the Go engine must leave them as they are.
	loadedLogs map[string]bool
	// loadedEvents are the ids of the workflow_events rows PHP wrote that
	// were loaded into the database.
	loadedEvents map[string]bool
}

// compareWith compares every table of want (PHP's snapshot, possibly
// adjusted for documented differences) with the Go database.
func (e *env) compareWith(want *phpfixture.Snapshot, opts ...compareOption) {
	e.t.Helper()
	c := &cmp{e: e, before: map[string][]string{}, loadedLogs: map[string]bool{}, loadedEvents: map[string]bool{}}
	for _, o := range opts {
		switch o {
		case logsJobsInAnyOrder:
			c.anyJobOrder = true
		default:
			require.Failf(e.t, "unknown compare option", "option %d", o)
		}
	}
	if e.loaded != nil {
		for _, r := range e.loaded.Rows("queuety_logs") {
			c.loadedLogs[*r["id"]] = true
		}
		for _, r := range e.loaded.Rows("queuety_workflow_events") {
			c.loadedEvents[*r["id"]] = true
		}
		for _, r := range e.loaded.Rows("queuety_workflows") {
			if s, ok := r.Get("state"); ok {
				c.before[*r["id"]] = objectKeys(e.t, s)
			}
		}
	}
	for _, table := range phpTables {
		want := want.Rows(table)
		got := e.rows(table)
		switch table {
		case "queuety_logs":
			c.logs(want, got)
		case "queuety_workflow_events":
			c.sequence(table, c.goBranchEvents(want), got)
		default:
			c.byKey(table, want, got)
		}
	}
}

// byKey matches rows by their first column (id, or queue for queue_states).
func (c *cmp) byKey(table string, want, got []phpfixture.Row) {
	t := c.e.t
	t.Helper()
	key := "id"
	if table == "queuety_queue_states" {
		key = "queue"
	}
	gotBy := map[string]phpfixture.Row{}
	for _, g := range got {
		gotBy[*g[key]] = g
	}
	seen := map[string]bool{}
	for _, w := range want {
		k := *w[key]
		seen[k] = true
		g, ok := gotBy[k]
		if !ok {
			assert.Failf(t, table+": row missing in Go", "PHP has row %s=%s, Go has none\n  PHP: %s", key, k, show(w))
			continue
		}
		if d := c.row(table, w, g); d != "" {
			assert.Failf(t, table+" row mismatch", "%s=%s:\n%s", key, k, d)
		}
	}
	for _, g := range got {
		if !seen[*g[key]] {
			assert.Failf(t, table+": row missing in PHP", "Go has row %s=%s, PHP has none\n  Go:  %s", key, *g[key], show(g))
		}
	}
}

// row compares one PHP row with one Go row, column by column, and returns
// "" when they match, else every difference and both rows, for the
// caller's failure message.
func (c *cmp) row(table string, want, got phpfixture.Row) string {
	var diffs []string
	for _, col := range sortedKeys(want) {
		if _, ok := got[col]; !ok {
			diffs = append(diffs, fmt.Sprintf("column %s missing in Go's table", col))
			continue
		}
		if d := c.column(table, col, want, got); d != "" {
			diffs = append(diffs, d)
		}
	}
	for col := range got {
		if _, ok := want[col]; !ok && !isGoOnly(table, col) {
			diffs = append(diffs, fmt.Sprintf("column %s is not Queuety's and not a known Go column", col))
		}
	}
	if len(diffs) > 0 {
		return fmt.Sprintf("  - %s\n  PHP: %s\n  Go:  %s", strings.Join(diffs, "\n  - "), show(want), show(got))
	}
	return ""
}

// column returns "" when the column matches, else a description.
func (c *cmp) column(table, col string, want, got phpfixture.Row) string {
	w, g := want[col], got[col]
	switch ruleFor(table, col) {
	case ignored:
		return ""
	case nullness:
		if (w == nil) != (g == nil) {
			return fmt.Sprintf("%s: PHP %s, Go %s (NULL-ness differs)", col, val(w), val(g))
		}
	case goNull:
		if table == "queuety_logs" && c.loadedLogs[val(want["id"])] && val(want["id"]) == val(got["id"]) {
			if val(w) != val(g) {
				return fmt.Sprintf("%s: PHP %s, Go %s (a loaded PHP row changed)", col, val(w), val(g))
			}
			return ""
		}
		if g != nil {
			return fmt.Sprintf("%s: Go wrote %s, expected NULL", col, val(g))
		}
	case jsonValue:
		if (w == nil) != (g == nil) || (w != nil && !jsonEqual(*w, *g)) {
			return fmt.Sprintf("%s: PHP %s, Go %s (JSON values differ)", col, val(w), val(g))
		}
		c.noteBytes(table, col, want, w, g)
	case errorDoc:
		if (w == nil) != (g == nil) {
			return fmt.Sprintf("%s: PHP %s, Go %s", col, val(w), val(g))
		}
		if w != nil {
			wd, gd := decodeMap(*w), decodeMap(*g)
			for _, k := range []string{"message", "class"} {
				if !reflect.DeepEqual(wd[k], gd[k]) {
					return fmt.Sprintf("%s.%s: PHP %v, Go %v", col, k, wd[k], gd[k])
				}
			}
			if (wd["trace"] == nil) != (gd["trace"] == nil) || len(wd) != len(gd) {
				return fmt.Sprintf("%s: keys differ: PHP %s, Go %s", col, *w, *g)
			}
		}
	case state:
		if w == nil || g == nil {
			if (w == nil) != (g == nil) {
				return fmt.Sprintf("%s: PHP %s, Go %s", col, val(w), val(g))
			}
			return ""
		}
		c.noteBytes(table, col, want, w, g)
		return c.state(*want["id"], *w, *g)
	default:
		if (w == nil) != (g == nil) || (w != nil && *w != *g) {
			return fmt.Sprintf("%s: PHP %s, Go %s", col, val(w), val(g))
		}
	}
	return ""
}

// noteBytes logs (without failing) a JSON column that is equal to PHP's as
// a value but not byte for byte, which is the case when a Go step's output
// keys are in another order than the PHP step's.
func (c *cmp) noteBytes(table, col string, want phpfixture.Row, w, g *string) {
	if w != nil && g != nil && *w != *g {
		c.e.t.Logf("%s %s (id %s, %s): same JSON value, other bytes:\n      PHP %s\n      Go  %s",
			table, col, val(want["id"]), val(want["event"]), *w, *g)
	}
}

// state compares a workflow's state: equal as JSON values; _steps and
// _definition_hash byte for byte; the keys the state had when it was
// loaded in the same order; and the private keys in PHP's order.
func (c *cmp) state(id, want, got string) string {
	if !jsonEqual(want, got) {
		return fmt.Sprintf("state: JSON values differ:\n      PHP %s\n      Go  %s", want, got)
	}
	for _, k := range []string{"_steps", "_definition_hash"} {
		wb, gb := rawMember(c.e.t, want, k), rawMember(c.e.t, got, k)
		if wb != gb {
			return fmt.Sprintf("state.%s bytes differ: PHP %s, Go %s", k, wb, gb)
		}
	}
	wk, gk := objectKeys(c.e.t, want), objectKeys(c.e.t, got)
	keep := map[string]bool{}
	for _, k := range c.before[id] {
		keep[k] = true
	}
	for _, k := range wk {
		if strings.HasPrefix(k, "_") {
			keep[k] = true
		}
	}
	if a, b := filter(wk, keep), filter(gk, keep); !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("state: key order differs: PHP %v, Go %v", wk, gk)
	}
	return ""
}

// logs compares log rows. The Go engine writes an attempt's 'started' row
// in the same transaction as its outcome, so ids, and the place of
// 'started' rows relative to other jobs' rows, may differ from PHP's. What
// must hold: the same rows; the same order of all rows other than
// 'started' (unless logsJobsInAnyOrder); and, per job, the same sequence
// of events, every column compared.
func (c *cmp) logs(want, got []phpfixture.Row) {
	t := c.e.t
	t.Helper()
	const table = "queuety_logs"
	if !assert.Equal(t, len(want), len(got), "%s: number of rows, PHP's (expected) and Go's (actual)\n  PHP:\n%s\n  Go:\n%s", table, showAll(want), showAll(got)) {
		return
	}
	notStarted := func(rs []phpfixture.Row) (out []phpfixture.Row) {
		for _, r := range rs {
			if *r["event"] != "started" {
				out = append(out, r)
			}
		}
		return out
	}
	perJob := func(rs []phpfixture.Row) map[string][]phpfixture.Row {
		out := map[string][]phpfixture.Row{}
		for _, r := range rs {
			out[val(r["job_id"])] = append(out[val(r["job_id"])], r)
		}
		return out
	}
	if !c.anyJobOrder && !c.pairwise(table+" (rows other than 'started', in order)", notStarted(want), notStarted(got)) {
		return
	}
	wj, gj := perJob(want), perJob(got)
	jobs := make([]string, 0, len(wj))
	for j := range wj {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		if !c.pairwise(table+" (job_id "+j+", in order)", wj[j], gj[j]) {
			return
		}
	}
	if c.anyJobOrder {
		if !c.sameOrder(table, want, got) {
			t.Logf("%s: same rows per job, in another order across jobs than PHP's\n  PHP:\n%s\n  Go:\n%s", table, showAll(want), showAll(got))
		}
		return
	}
	if !c.sameOrder(table, want, got) {
		t.Logf("%s: same rows, but 'started' rows sit elsewhere than in PHP's order (the Go engine writes them with the outcome)\n  PHP:\n%s\n  Go:\n%s", table, showAll(want), showAll(got))
	}
}

// goBranchEvents returns want with the for-each branch events that the
// Go engine wrote in the form it writes them (a documented difference):
// the step_started, step_item_completed and step_failed events of a branch
// job carry no state_before and state_after, and their input is the item
// and its index without the public state. Queuety copies the state, item
// list included, into each of them, so their size grows with the square of
// the item count. Rows loaded from PHP's snapshot stay as PHP wrote them.
func (c *cmp) goBranchEvents(want []phpfixture.Row) []phpfixture.Row {
	t := c.e.t
	out := make([]phpfixture.Row, len(want))
	for i, r := range want {
		out[i] = r
		if c.loadedEvents[val(r["id"])] || val(r["step_type"]) != "for_each" || val(r["handler"]) == engine.HandlerForEach {
			continue
		}
		switch val(r["event"]) {
		case "step_started", "step_item_completed", "step_failed":
		default:
			continue
		}
		in, err := phpjson.Decode([]byte(val(r["input"])))
		require.NoError(t, err, "PHP branch event %s input", val(r["id"]))
		o, ok := in.(*phpjson.Object)
		require.True(t, ok, "PHP branch event %s input %s", val(r["id"]), val(r["input"]))
		o.Delete("state")
		nr := phpfixture.Row{}
		for k, v := range r {
			nr[k] = v
		}
		nr["input"], nr["state_before"], nr["state_after"] = str(string(workflowstate.EncodeJSON(o))), nil, nil
		out[i] = nr
	}
	return out
}

// sequence compares rows in order (workflow_events).
func (c *cmp) sequence(table string, want, got []phpfixture.Row) {
	c.e.t.Helper()
	c.pairwise(table, want, got)
}

func (c *cmp) pairwise(what string, want, got []phpfixture.Row) bool {
	t := c.e.t
	t.Helper()
	table := strings.Fields(what)[0]
	if !assert.Equal(t, len(want), len(got), "%s: number of rows, PHP's (expected) and Go's (actual)\n  PHP:\n%s\n  Go:\n%s", what, showAll(want), showAll(got)) {
		return false
	}
	ok := true
	for i := range want {
		if d := c.row(table, want[i], got[i]); d != "" {
			assert.Failf(t, table+" row mismatch", "%s, row %d of %d:\n%s", what, i+1, len(want), d)
			ok = false
		}
	}
	return ok
}

// sameOrder reports whether the events appear in exactly PHP's order.
func (c *cmp) sameOrder(table string, want, got []phpfixture.Row) bool {
	for i := range want {
		for _, col := range []string{"job_id", "event", "attempt"} {
			if val(want[i][col]) != val(got[i][col]) {
				return false
			}
		}
	}
	return true
}

// clone deep-copies a snapshot, so a test can adjust PHP's expected rows
// for documented differences without touching the fixture.
func clone(s *phpfixture.Snapshot) *phpfixture.Snapshot {
	out := *s
	out.Tables = map[string][]phpfixture.Row{}
	for name, rows := range s.Tables {
		cp := make([]phpfixture.Row, len(rows))
		for i, r := range rows {
			nr := phpfixture.Row{}
			for k, v := range r {
				nr[k] = v
			}
			cp[i] = nr
		}
		out.Tables[name] = cp
	}
	return &out
}

// rowsOf returns a table's rows of a (cloned) snapshot.
func rowsOf(s *phpfixture.Snapshot, name string) []phpfixture.Row {
	return s.Tables[phpfixture.SourcePrefix+name]
}

// setRows replaces a table's rows in a cloned snapshot.
func setRows(s *phpfixture.Snapshot, name string, rows []phpfixture.Row) {
	s.Tables[phpfixture.SourcePrefix+name] = rows
}

// find returns the rows of a table matching every col=value pair.
func find(rows []phpfixture.Row, kv ...string) []phpfixture.Row {
	var out []phpfixture.Row
	for _, r := range rows {
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			if val(r[kv[i]]) != kv[i+1] {
				match = false
			}
		}
		if match {
			out = append(out, r)
		}
	}
	return out
}

// one returns the only row of rows matching kv, or fails.
func one(t *testing.T, rows []phpfixture.Row, kv ...string) phpfixture.Row {
	t.Helper()
	m := find(rows, kv...)
	require.Equal(t, 1, len(m), "rows with %v, among:\n%s", kv, showAll(rows))
	return m[0]
}

// val renders a nullable value for messages ("NULL" for nil).
func val(v *string) string {
	if v == nil {
		return "NULL"
	}
	return *v
}

func show(r phpfixture.Row) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range sortedKeys(r) {
		if i > 0 {
			b.WriteString(", ")
		}
		if r[k] == nil {
			fmt.Fprintf(&b, "%s=NULL", k)
		} else {
			fmt.Fprintf(&b, "%s=%q", k, *r[k])
		}
	}
	b.WriteByte('}')
	return b.String()
}

func showAll(rows []phpfixture.Row) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("    " + show(r) + "\n")
	}
	return b.String()
}

// jsonEqual reports whether two JSON texts hold the same value, reading
// them as PHP does: an empty list and an empty object are the same.
func jsonEqual(a, b string) bool {
	va, err1 := phpjson.Decode([]byte(a))
	vb, err2 := phpjson.Decode([]byte(b))
	if err1 != nil || err2 != nil {
		return a == b
	}
	return reflect.DeepEqual(canon(va), canon(vb))
}

// canon turns a decoded tree into comparable plain values.
func canon(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		if x.Len() == 0 {
			return []any{}
		}
		m := map[string]any{}
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			m[k] = canon(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canon(e)
		}
		return out
	}
	return v
}

// decodeMap decodes a JSON object into plain values (nil when it is not an
// object).
func decodeMap(s string) map[string]any {
	v, err := phpjson.Decode([]byte(s))
	if err != nil {
		return nil
	}
	m, _ := canon(v).(map[string]any)
	return m
}

// objectKeys returns the top-level keys of a JSON object, in order.
func objectKeys(t *testing.T, s string) []string {
	t.Helper()
	o, err := phpjson.DecodeObject([]byte(s))
	require.NoError(t, err, "not a JSON object: %s", s)
	return o.Keys()
}

// rawMember returns the PHP-JSON bytes of one top-level member, or "" when
// it is missing. It fails the test when re-encoding the member does not
// reproduce the stored text, so the bytes compared are the stored ones.
func rawMember(t *testing.T, s, key string) string {
	t.Helper()
	o, err := phpjson.DecodeObject([]byte(s))
	require.NoError(t, err, "not a JSON object: %s", s)
	v, ok := o.Get(key)
	if !ok {
		return ""
	}
	b, err := phpjson.Marshal(v)
	require.NoError(t, err, "re-encoding %s", key)
	require.Contains(t, s, `"`+key+`":`+string(b), "re-encoding %s does not reproduce the stored bytes", key)
	return string(b)
}

func filter(keys []string, keep map[string]bool) []string {
	var out []string
	for _, k := range keys {
		if keep[k] {
			out = append(out, k)
		}
	}
	return out
}

// jsonOf renders a value as compact JSON for messages.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func phpjsonDecodeObject(s string) (*phpjson.Object, error) { return phpjson.DecodeObject([]byte(s)) }

func phpjsonMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := phpjson.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
