package queuety

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

// Open opens the store a DSN names, applies migrations (unless
// SkipMigrate is given) and returns a Client. DSNs look like
//
//	mysql://user:pass@127.0.0.1:3306/wordpress?prefix=wp_
//	user:pass@tcp(127.0.0.1:3306)/wordpress?prefix=wp_   (go-sql-driver form)
//	sqlite://queuety.db
//	sqlite://:memory:
//
// The matching store package must be imported (blank import). Errors
// never hold the DSN's password.
func Open(ctx context.Context, dsn string, opts ...Option) (*Client, error) {
	cfg := newConfig(opts)
	s, err := driver.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if !cfg.skipMigrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, driver.RedactError(fmt.Errorf("queuety: migrate: %w", err), dsn)
		}
	}
	for _, w := range s.Info().Warnings {
		cfg.logger.Warn("queuety: "+w, "store", s.Info().Driver)
	}
	cfg.wakeKey = dsn // clients of one process on one store wake each other's idle workers
	return newClient(s, cfg), nil
}
