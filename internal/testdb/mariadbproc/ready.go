package mariadbproc

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Starting is a database server process that was just started, as
// WaitReady waits for it. The MariaDB, Galera and PostgreSQL helpers of
// the tests share it.
type Starting struct {
	Name    string          // the server, for errors
	Exited  <-chan struct{} // closed when the process has ended
	State   func() string   // how it ended, once Exited is closed
	Timeout time.Duration   // how long it may take to answer
	Pause   time.Duration   // between pings
	Kill    func()          // stops it when it does not answer in time
	LogTail func() string   // the end of its log, for errors
}

// WaitReady pings db until the server answers. It returns an error with
// the log's tail when the process ends first, or when s.Timeout passes
// (after calling s.Kill).
func (s Starting) WaitReady(db *sql.DB) error {
	deadline := time.Now().Add(s.Timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.Exited:
			return fmt.Errorf("%s exited while starting: %s\n%s", s.Name, s.State(), s.LogTail())
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("%s did not answer within %s: %v\n%s", s.Name, s.Timeout, err, s.LogTail())
		}
		time.Sleep(s.Pause)
	}
}
