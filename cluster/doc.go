// Package cluster holds the Galera suite: the engine on a private
// three-node MariaDB Galera cluster on loopback (internal/testdb/galera),
// with workers spread over the nodes, so that conflicting writes from two
// nodes meet at COMMIT as certification failures. The tests are behind
// the galera build tag:
//
//	go test -tags galera -run TestGalera -v ./cluster/
//
// They skip when MariaDB, the Galera provider or rsync is missing, and
// fail instead when CI=true.
package cluster
