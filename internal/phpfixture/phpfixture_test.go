package phpfixture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const dir = "../../testdata/queuety-php"

func TestLoadEveryFixture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		fx, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if fx.Scenario+".json" != filepath.Base(f) {
			t.Errorf("%s: scenario %q", f, fx.Scenario)
		}
		var prev *Snapshot
		for _, s := range fx.Snapshots {
			if len(s.Tables) != 16 {
				t.Errorf("%s / %s: %d tables, want 16", fx.Scenario, s.Label, len(s.Tables))
			}
			for name := range s.Tables {
				if !strings.HasPrefix(name, SourcePrefix+"queuety_") {
					t.Errorf("%s / %s: table %q is not one of Queuety's", fx.Scenario, s.Label, name)
				}
			}
			// Tests look snapshots up by label: each label must find its own.
			if got := fx.Snapshot(s.Label); got != s {
				t.Errorf("%s: label %q finds another snapshot (%v)", fx.Scenario, s.Label, got)
			}
			if s.Now().Format(DBNowLayout) != s.DBNow {
				t.Errorf("%s / %s: db_now %q reads back as %s", fx.Scenario, s.Label, s.DBNow, s.Now())
			}
			// Tests move the fake clock forward through the snapshots.
			if prev != nil && s.Now().Before(prev.Now()) {
				t.Errorf("%s / %s: db_now %s is before the previous snapshot's %s", fx.Scenario, s.Label, s.DBNow, prev.DBNow)
			}
			prev = s
		}
	}
}

func TestSnapshotLookup(t *testing.T) {
	fx, err := Load(filepath.Join(dir, "c_three_step_workflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s := fx.Snapshot("dispatched"); s == nil || s.Label != "dispatched" {
		t.Errorf("exact label: %v", s)
	}
	if s := fx.Snapshot("after step 0"); s == nil || !strings.HasPrefix(s.Label, "after step 0") {
		t.Errorf("label prefix: %v", s)
	}
	if s := fx.Snapshot("nope"); s != nil {
		t.Errorf("unknown label found %q", s.Label)
	}
	two := &Fixture{Snapshots: []*Snapshot{{Label: "after a"}, {Label: "after b"}, {Label: "after"}}}
	if s := two.Snapshot("after "); s != nil {
		t.Errorf("ambiguous label prefix found %q", s.Label)
	}
	if s := two.Snapshot("after"); s != two.Snapshots[2] {
		t.Errorf("an exact label loses to prefixes: found %v", s)
	}
	s := fx.Snapshot("dispatched")
	jobs := s.Rows("queuety_jobs")
	if len(jobs) != 1 {
		t.Fatalf("jobs: %d", len(jobs))
	}
	if v, ok := jobs[0].Get("payload"); !ok || v != `{"__queuety_runtime":{"max_attempts":3}}` {
		t.Errorf("payload %q, %v", v, ok)
	}
	if _, ok := jobs[0].Get("reserved_at"); ok {
		t.Error("reserved_at is NULL in the fixture")
	}
	if s.Now().Location() != time.UTC || s.Now().Format(DBNowLayout) != s.DBNow {
		t.Errorf("Now() = %s, db_now %s", s.Now(), s.DBNow)
	}
}

func TestStatements(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dir, "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	stmts := Statements(string(data), "t1_")
	if len(stmts) != 16 {
		t.Fatalf("%d statements, want 16", len(stmts))
	}
	for _, s := range stmts {
		if !strings.HasPrefix(s, "CREATE TABLE `t1_queuety_") || strings.Contains(s, "wp_") || strings.HasSuffix(s, ";") {
			t.Errorf("statement: %.80s", s)
		}
	}
}
