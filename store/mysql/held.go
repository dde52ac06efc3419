package mysql

import "github.com/queuety/queuety-go/internal/sqlstore"

// NoHeldClaims implements driver.HeldClaimsRefuser: on a Galera cluster
// whose writes replicate the store holds no claims (see
// worker.HoldClaims).
func (s *Store) NoHeldClaims() string { return s.noHold }

// holdSession bounds a held claim's idle transaction: MariaDB rolls back
// a transaction idle past idle_transaction_timeout; MySQL has no such
// variable, so there the connection's wait_timeout bounds it (the server
// closes the connection, which rolls the transaction back).
//
// On a Galera node whose sessions replicate (wsrep_on) there is none, and
// why is returned: row locks are local to a node, so a claim through
// another node would not see a held claim's locks and would run its jobs
// too.
func holdSession(v ServerVersion, replicates bool) (*sqlstore.HoldSession, string) {
	if replicates {
		return nil, "on a Galera cluster row locks are local to a node, so a worker writing through another node would claim the held jobs and run them twice"
	}
	if v.MariaDB {
		return &sqlstore.HoldSession{Set: "SET SESSION idle_transaction_timeout = %d", Reset: "SET SESSION idle_transaction_timeout = DEFAULT"}, ""
	}
	return &sqlstore.HoldSession{Set: "SET SESSION wait_timeout = %d", Reset: "SET SESSION wait_timeout = DEFAULT"}, ""
}
