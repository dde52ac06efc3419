package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestBenchSQLite(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "unused.db")
	r := run(t, nil, "bench", "--dsn", dsn, "--jobs", "300", "--workflows", "20", "--runs", "1", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Store   string `json:"store"`
		Results []struct {
			Name   string  `json:"name"`
			Median float64 `json:"median"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("bad JSON %q: %v", r.stdout, err)
	}
	want := map[string]bool{"dispatch": true, "drain-1w": true, "drain-4w": true, "workflow-3step-4w": true}
	for _, res := range rep.Results {
		if res.Median <= 0 {
			t.Errorf("%s: median %v", res.Name, res.Median)
		}
		delete(want, res.Name)
	}
	if rep.Store != "sqlite" || len(want) != 0 {
		t.Fatalf("store %q, missing scenarios %v", rep.Store, want)
	}
	if bad := run(t, nil, "bench", "--dsn", dsn, "--workers", "0"); bad.code != 2 {
		t.Fatalf("--workers 0: exit %d", bad.code)
	}
}
