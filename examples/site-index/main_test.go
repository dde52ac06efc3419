package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSiteIndex runs the example on a fresh SQLite file: every step type
// runs to completion on Go workers alone.
func TestSiteIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "site.db")
	require.NoError(t, run(ctx, &out, dsn, "site_index_demo"), "output:\n%s", out.String())
	got := out.String()
	for _, want := range []string{
		"workflow 1: completed",
		"index_pages                  for_each            completed  5/5 branches succeeded",
		"/docs     attempt 1 failed",
		"summarize_index   5 of 5 pages, 3500 words",
		"repeat_until_3               repeat              completed  jumped back 2 times",
		"run_workflow        completed  children: 2 publish_index completed",
		"start_workflows     completed  children: 3 notify_subscriber completed, 4 notify_subscriber completed, 5 notify_subscriber completed",
		"wait_for_workflows  completed",
		"report            5 pages, published=true, 3 notifications",
		`state.notification_ids = [3,4,5]`,
	} {
		assert.Contains(t, got, want)
	}
}
