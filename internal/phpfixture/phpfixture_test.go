package phpfixture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dir = "../../testdata/queuety-php"

func TestLoadEveryFixture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no fixtures")
	for _, f := range files {
		fx, err := Load(f)
		require.NoError(t, err)
		assert.Equal(t, filepath.Base(f), fx.Scenario+".json", "%s: scenario", f)
		var prev *Snapshot
		for _, s := range fx.Snapshots {
			assert.Len(t, s.Tables, 16, "%s / %s: tables", fx.Scenario, s.Label)
			for name := range s.Tables {
				assert.True(t, strings.HasPrefix(name, SourcePrefix+"queuety_"), "%s / %s: table %q is not one of Queuety's", fx.Scenario, s.Label, name)
			}
			// Tests look snapshots up by label: each label must find its own.
			assert.Same(t, s, fx.Snapshot(s.Label), "%s: label %q finds another snapshot", fx.Scenario, s.Label)
			assert.Equal(t, s.DBNow, s.Now().Format(DBNowLayout), "%s / %s: db_now reads back differently", fx.Scenario, s.Label)
			// Tests move the fake clock forward through the snapshots.
			if prev != nil {
				assert.False(t, s.Now().Before(prev.Now()), "%s / %s: db_now %s is before the previous snapshot's %s", fx.Scenario, s.Label, s.DBNow, prev.DBNow)
			}
			prev = s
		}
	}
}

func TestSnapshotLookup(t *testing.T) {
	fx, err := Load(filepath.Join(dir, "c_three_step_workflow.json"))
	require.NoError(t, err)
	if s := fx.Snapshot("dispatched"); assert.NotNil(t, s, "exact label") {
		assert.Equal(t, "dispatched", s.Label, "exact label")
	}
	if s := fx.Snapshot("after step 0"); assert.NotNil(t, s, "label prefix") {
		assert.True(t, strings.HasPrefix(s.Label, "after step 0"), "label prefix found %q", s.Label)
	}
	assert.Nil(t, fx.Snapshot("nope"), "unknown label")
	two := &Fixture{Snapshots: []*Snapshot{{Label: "after a"}, {Label: "after b"}, {Label: "after"}}}
	assert.Nil(t, two.Snapshot("after "), "ambiguous label prefix")
	assert.Same(t, two.Snapshots[2], two.Snapshot("after"), "an exact label loses to prefixes")
	s := fx.Snapshot("dispatched")
	jobs := s.Rows("queuety_jobs")
	require.Len(t, jobs, 1, "jobs")
	v, ok := jobs[0].Get("payload")
	assert.True(t, ok, "payload is NULL")
	assert.Equal(t, `{"__queuety_runtime":{"max_attempts":3}}`, v, "payload")
	_, ok = jobs[0].Get("reserved_at")
	assert.False(t, ok, "reserved_at is NULL in the fixture")
	assert.Same(t, time.UTC, s.Now().Location(), "Now() = %s", s.Now())
	assert.Equal(t, s.DBNow, s.Now().Format(DBNowLayout), "Now()")
}

func TestStatements(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dir, "schema.sql"))
	require.NoError(t, err)
	stmts := Statements(string(data), "t1_")
	require.Len(t, stmts, 16, "statements")
	for _, s := range stmts {
		assert.True(t, strings.HasPrefix(s, "CREATE TABLE `t1_queuety_"), "statement does not create a t1_queuety_ table: %.80s", s)
		assert.NotContains(t, s, "wp_", "statement: %.80s", s)
		assert.False(t, strings.HasSuffix(s, ";"), "statement ends with a semicolon: %.80s", s)
	}
}
