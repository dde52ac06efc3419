package schedexpr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzParse checks that parsing never panics and that an accepted schedule
// only moves forward in time.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "0 0 13 * 5", "0 9 * * 1-7/2", "@every 1h", "15 minutes", "1 hour 30 minutes", "90s"} {
		f.Add(s)
	}
	after := time.Date(2026, time.March, 10, 10, 2, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		for _, typ := range []Type{Interval, Cron} {
			s, err := Parse(typ, expr)
			if err != nil {
				continue
			}
			next := s.Next(after)
			require.True(t, next.IsZero() || next.After(after), "Parse(%q, %q).Next(%v) = %v, not after", typ, expr, after, next)
		}
	})
}
