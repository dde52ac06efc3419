package sqlstore

import (
	"context"
	"time"
)

// migrate applies the store's migrations with package store/migrate's
// runner, on the prefix's versions table, recording applied_at in the
// dialect's time encoding.
func (s *Store) migrate(ctx context.Context) error {
	m := s.migrations
	m.Table = s.T.Migrations
	m.AppliedAt = func(t time.Time) any { return s.D.Time(t, true) }
	return m.Apply(ctx, s.DB)
}
