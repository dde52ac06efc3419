//go:build chaos

package chaos

import (
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/queuety/queuety-go/internal/testdb/pgproc"
)

// TestChaosPostgres runs the scenarios that count lost and duplicated work
// against a private PostgreSQL server: workers SIGKILLed (jobs,
// workflows), the server crashed and restarted under them (postgres), and
// racing deadline sweepers (deadlines).
func TestChaosPostgres(t *testing.T) {
	runChaos(t, "postgres", startPostgres, []scenarioDef{
		{"jobs", runJobs},
		{"workflows", runWorkflows},
		{"postgres", runServerCrash},
		{"deadlines", runDeadlines},
	})
}

// postgres is the suite's private PostgreSQL server (see pgproc): initdb
// on a fresh directory, a free port on 127.0.0.1, fsync off (commits reach
// the OS, so they survive a crash of the server, not of the machine).
type postgres struct{ *pgproc.Server }

func startPostgres(t *testing.T) dbServer {
	return postgres{pgproc.Start(t, pgproc.Options{Keep: os.Getenv("QUEUETY_CHAOS_KEEP") != ""})}
}

func (p postgres) root() string   { return p.Dir }
func (p postgres) driver() string { return "pgx" }

func (p postgres) driverDSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return p.DriverDSN(db)
}

func (p postgres) queuetyDSN(db, prefix string) string { return p.DSN(db, prefix) }

// crash is an immediate shutdown: every backend quits at once and the
// next start replays the WAL.
func (p postgres) crash() { p.Crash() }

func (p postgres) restart() (time.Duration, error) {
	t0 := time.Now()
	err := p.Restart(2 * time.Minute)
	return time.Since(t0), err
}
