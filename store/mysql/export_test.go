package mysql

import (
	"context"
	"time"
)

// QuietAfter is quietAfter, for the external tests.
const QuietAfter = quietAfter

// MigrateTo applies the store's migrations up to version only, as an
// older release of this package left the tables.
func (s *Store) MigrateTo(ctx context.Context, version int) error {
	m := namedMigrations(s.cfg.names())
	m.List = m.List[:version]
	m.Table = s.T.Migrations
	m.AppliedAt = func(t time.Time) any { return s.D.Time(t, true) }
	return m.Apply(ctx, s.DB)
}
