package postgres

import "testing"

// TestRebind numbers the '?' markers and leaves those in quoted text and
// comments alone.
func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1": "SELECT 1",
		"SELECT * FROM t WHERE a = ? AND b IN (?, ?)":   "SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)",
		"SELECT '?', 'it''s ?', ? FROM t":               "SELECT '?', 'it''s ?', $1 FROM t",
		`SELECT "odd?name", ? FROM t`:                   `SELECT "odd?name", $1 FROM t`,
		"SELECT ? -- what?\n, ?":                        "SELECT $1 -- what?\n, $2",
		"SELECT /* a ? b */ ?":                          "SELECT /* a ? b */ $1",
		"SELECT 'unterminated ?":                        "SELECT 'unterminated ?",
		"UPDATE t SET c = ? WHERE id = ? -- trailing ?": "UPDATE t SET c = $1 WHERE id = $2 -- trailing ?",
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
