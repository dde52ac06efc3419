package mysql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestListenerToken: a send reads a listener's token from the end of its
// statement; a listener of a release before tokens has none, and a text
// that only starts like a listener's is none.
func TestListenerToken(t *testing.T) {
	head := "SELECT SLEEP(20) AS queuety_go_wake, 'db.queuety_jobs' AS jobs_table"
	tok := newToken()
	assert.Len(t, tok, 2*tokenBytes)
	assert.NotEqual(t, tok, newToken(), "tokens are random")

	got, ok := listenerToken(head, wakeSQL(head, tok))
	assert.True(t, ok)
	assert.Equal(t, tok, got)
	got, ok = listenerToken(head, head)
	assert.True(t, ok, "a listener of an older release")
	assert.Empty(t, got)

	for _, info := range []string{
		strings.ToLower(wakeSQL(head, tok)),                   // another text, equal without case
		wakeSQL(head, tok[:len(tok)-1]),                       // a token cut short
		wakeSQL(head, strings.Repeat("g", 2*tokenBytes)),      // not hex
		wakeSQL(head, tok) + " ",                              // more after it
		head + "2",                                            // another table
		"SELECT SLEEP(20) AS queuety_go_wake, 'db.queuety_jo", // cut short
	} {
		_, ok := listenerToken(head, info)
		assert.False(t, ok, "%q", info)
	}
}
