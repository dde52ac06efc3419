package phpjson_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// fixtureDir holds database snapshots written by the PHP implementation. In
// each file, table cells are JSON strings holding the stored bytes.
const fixtureDir = "../../testdata/queuety-php"

type fixture struct {
	Scenario  string `json:"scenario"`
	Snapshots []struct {
		Label  string                          `json:"label"`
		Tables map[string][]map[string]*string `json:"tables"`
	} `json:"snapshots"`
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	var f fixture
	require.NoError(t, json.Unmarshal(b, &f), name)
	return f
}

// cell returns the stored value of column col in the row of table whose id is
// id, in snapshot snap.
func cell(t testing.TB, f fixture, snap int, table, id, col string) string {
	t.Helper()
	for _, row := range f.Snapshots[snap].Tables[table] {
		if row["id"] != nil && *row["id"] == id {
			require.NotNil(t, row[col], "%s snapshot %d %s id %s: %s is NULL", f.Scenario, snap, table, id, col)
			return *row[col]
		}
	}
	require.FailNow(t, "row not found", "%s snapshot %d: no %s row with id %s", f.Scenario, snap, table, id)
	return ""
}

// emptyObjectsAsArrays replaces every {} outside string literals with [],
// which is what a PHP-written (object)[] becomes after a decode and encode.
func emptyObjectsAsArrays(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			inString = !inString
		case !inString && c == '{' && i+1 < len(b) && b[i+1] == '}':
			out = append(out, '[', ']')
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// job9Payload is the payload PHP stored for job 9 of a_plain_jobs.
func job9Payload(t testing.TB) []byte {
	t.Helper()
	return []byte(cell(t, loadFixture(t, "a_plain_jobs.json"), 0, "wp_queuety_jobs", "9", "payload"))
}

func TestGoldenPayloadRoundTrip(t *testing.T) {
	stored := job9Payload(t)
	o, err := phpjson.DecodeObject(stored)
	require.NoError(t, err)
	got, err := phpjson.Marshal(o)
	require.NoError(t, err)
	// PHP wrote (object)[] as {}; decoded, it is an empty PHP array, which
	// json_encode writes as []. That is the only expected difference.
	const phpEmpty, goEmpty = `"empty_object":{}`, `"empty_object":[]`
	require.Equal(t, 1, bytes.Count(stored, []byte(phpEmpty)), "fixture changed: want exactly one %s in %s", phpEmpty, stored)
	want := bytes.Replace(stored, []byte(phpEmpty), []byte(goEmpty), 1)
	assert.Equal(t, string(want), string(got), "round trip differs")
	require.Len(t, got, len(stored), "round trip changed the length")
	var diffs []int
	for i := range got {
		if got[i] != stored[i] {
			diffs = append(diffs, i)
		}
	}
	at := bytes.Index(stored, []byte(phpEmpty)) + len(`"empty_object":`)
	assert.Equal(t, []int{at, at + 1}, diffs, "bytes differ elsewhere than the {} at %d", at)

	big, _ := o.Get("big_int")
	assert.Equal(t, int64(9007199254740993), big, "big_int")
}

// TestGoldenPayloadFromGoValues encodes the PHP dispatch() arguments of job 9
// from Go values and compares with what PHP stored.
func TestGoldenPayloadFromGoValues(t *testing.T) {
	address := phpjson.NewObject()
	address.Set("zip", "10115")
	address.Set("country", "DE")
	customer := phpjson.NewObject()
	customer.Set("id", 42)
	customer.Set("tags", []string{"vip", "eu"})
	customer.Set("address", address)
	nested := phpjson.NewObject()
	nested.Set("customer", customer)
	sparse := phpjson.NewObject() // [1 => 'a', 2 => 'b']
	sparse.Set("1", "a")
	sparse.Set("2", "b")

	p := phpjson.NewObject()
	p.Set("url", "https://example.com/feeds/a/b.xml?x=1&y=2")
	p.Set("name", "Café Müller")
	p.Set("city", "日本 東京")
	p.Set("emoji", "😀")
	p.Set("html", `<b>"Tom" & 'Jerry'</b>`)
	p.Set("windows_path", `C:\temp\new`)
	p.Set("nested", nested)
	p.Set("empty_object", phpjson.NewObject()) // (object) [] cannot be expressed: it is []
	p.Set("empty_list", []any{})
	p.Set("float_one", 1.0)
	p.Set("float_2_5", 2.5)
	p.Set("float_0_1", 0.1)
	p.Set("negative", -7)
	p.Set("big_int", int64(9007199254740993))
	p.Set("yes", true)
	p.Set("no", false)
	p.Set("nothing", nil)
	p.Set("zip_string", "0042")
	p.Set("sparse", sparse)

	got, err := phpjson.Marshal(p)
	require.NoError(t, err)
	want := bytes.Replace(job9Payload(t), []byte(`"empty_object":{}`), []byte(`"empty_object":[]`), 1)
	assert.Equal(t, string(want), string(got))
}

func TestGoldenWorkflowStateRoundTrip(t *testing.T) {
	f := loadFixture(t, "c_three_step_workflow.json")
	for i, snap := range f.Snapshots {
		t.Run(snap.Label, func(t *testing.T) {
			stored := []byte(cell(t, f, i, "wp_queuety_workflows", "1", "state"))
			o, err := phpjson.DecodeObject(stored)
			require.NoError(t, err)
			got, err := phpjson.Marshal(o)
			require.NoError(t, err)
			assert.Equal(t, string(stored), string(got))
		})
	}
}

// TestGoldenFixtureCorpus round-trips every JSON cell PHP wrote in every
// fixture. The only accepted change is {} (a PHP object) becoming [].
func TestGoldenFixtureCorpus(t *testing.T) {
	jsonColumns := map[string]bool{
		"payload": true, "state": true, "input": true, "output": true, "context": true,
		"state_before": true, "state_after": true, "error": true,
	}
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no fixtures")
	checked := 0
	for _, file := range files {
		f := loadFixture(t, filepath.Base(file))
		for _, snap := range f.Snapshots {
			for table, rows := range snap.Tables {
				for _, row := range rows {
					for col, v := range row {
						if v == nil || !jsonColumns[col] || !strings.HasPrefix(*v, "{") && !strings.HasPrefix(*v, "[") {
							continue
						}
						stored := []byte(*v)
						val, err := phpjson.Decode(stored)
						if !assert.NoError(t, err, "%s %s.%s: decode", f.Scenario, table, col) {
							continue
						}
						got, err := phpjson.Marshal(val)
						if !assert.NoError(t, err, "%s %s.%s: marshal", f.Scenario, table, col) {
							continue
						}
						assert.Equal(t, string(emptyObjectsAsArrays(stored)), string(got), "%s %s.%s", f.Scenario, table, col)
						checked++
					}
				}
			}
		}
	}
	require.GreaterOrEqual(t, checked, 100, "cells checked")
	t.Logf("%d JSON cells round-tripped", checked)
}

// definitionHash computes a workflow's _definition_hash the way PHP does:
// sha256 over json_encode of the definition, with keys in this order.
func definitionHash(t *testing.T, name string, steps any) string {
	t.Helper()
	def := phpjson.NewObject()
	def.Set("name", name)
	def.Set("steps", steps)
	def.Set("queue", "default")
	def.Set("priority", 0)
	def.Set("max_attempts", 3)
	for _, k := range []string{
		"cancel_handler", "prune_after", "deadline_seconds", "deadline_handler",
		"definition_version", "max_transitions", "max_for_each_items", "max_state_bytes",
	} {
		def.Set(k, nil)
	}
	def.Set("compensate_on_failure", false)
	b, err := phpjson.Marshal(def)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestDefinitionHash(t *testing.T) {
	tests := []struct {
		file, workflow string
	}{
		{"c_three_step_workflow.json", "order_fulfilment"},
		{"h_next_step.json", "ticket_triage"},
		{"d_delay_step.json", "drip_campaign"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f := loadFixture(t, tt.file)
			state, err := phpjson.DecodeObject([]byte(cell(t, f, 0, "wp_queuety_workflows", "1", "state")))
			require.NoError(t, err)
			steps, ok := state.Get("_steps")
			require.True(t, ok, "state has no _steps")
			want, _ := state.Get("_definition_hash")
			assert.Equal(t, want, definitionHash(t, tt.workflow, steps), "definition hash, against the one PHP stored")
		})
	}
}
