package postgres

import (
	"strings"
	"testing"
)

// TestLongPrefixKeepsIndexNamesApart: with the longest prefix, every
// index name fits PostgreSQL's 63 bytes and no two are the same (cut
// names would collide, and CREATE INDEX IF NOT EXISTS would then skip an
// index without a word).
func TestLongPrefixKeepsIndexNamesApart(t *testing.T) {
	seen := map[string]bool{}
	n := 0
	for _, st := range schemaStatements(strings.Repeat("p", 32)) {
		m := indexNameRE.FindStringSubmatch(st)
		if m == nil {
			continue
		}
		n++
		if len(m[1]) > maxIdent {
			t.Errorf("index name %s is %d bytes", m[1], len(m[1]))
		}
		if seen[m[1]] {
			t.Errorf("index name %s twice", m[1])
		}
		seen[m[1]] = true
	}
	if n < 50 {
		t.Fatalf("found %d index names in the schema", n)
	}
}

// TestChannelFitsAnIdentifier: the notification channel of the longest
// schema and prefix fits 63 bytes, and different tables get different
// channels.
func TestChannelFitsAnIdentifier(t *testing.T) {
	long := channel(strings.Repeat("s", 63), strings.Repeat("p", 32))
	if len(long) > maxIdent {
		t.Errorf("channel %s is %d bytes", long, len(long))
	}
	if long == channel(strings.Repeat("s", 63), strings.Repeat("p", 31)) {
		t.Error("two prefixes share a channel")
	}
	if got := channel("jobs", "app_"); got != "queuety_jobs:jobs:app_" {
		t.Errorf("channel = %q", got)
	}
}
