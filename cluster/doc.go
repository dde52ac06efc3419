// Package cluster holds the Galera suite: the engine on a private
// three-node MariaDB Galera cluster on loopback (internal/testdb/galera),
// with workers spread over the nodes, so that conflicting writes from two
// nodes meet at COMMIT as certification failures. The tests are behind
// the galera build tag:
//
//	go test -tags galera -run TestGalera -v ./cluster/
//
// TestGalera runs, on one cluster: a drain and three-step workflows;
// a certification failure and a node refusing queries, each retried as a
// whole transaction; deadline handlers, schedule slots and batch callbacks
// run exactly once with every node's workers sweeping, and concurrency
// and rate limits held; a node stopped while the other two keep quorum;
// and a node SIGKILLed under a mixed load and rejoined. Environment
// variables scale it up from the small default CI runs:
// QUEUETY_GALERA_JOBS, QUEUETY_GALERA_WORKFLOWS (three-step workflows),
// QUEUETY_GALERA_EXPIRING (workflows that pass their deadline),
// QUEUETY_GALERA_BATCHES, QUEUETY_GALERA_LIMITED and QUEUETY_GALERA_SLOTS.
// Run one case at a time with -run 'TestGalera/KillNode'.
//
// TestGaleraWake, on a cluster of its own: a commit through node1 wakes
// idle listeners and workers through the other nodes, with a DSN naming
// every node and with single-host DSNs, and goes on waking node2's while
// node3 hangs (SIGSTOP). TestGaleraWakeLatency, which runs only when
// QUEUETY_GALERA_WAKE_LATENCY is set, measures the dispatch-to-start
// latency across nodes (bench/RESULTS.md).
//
// TestGaleraHeldClaims: on a cluster the store holds no claims (row
// locks are local to a node), so a job a worker through node1 runs is not
// run again by a worker through node2 that asked for held claims too.
//
// TestGaleraModes, which runs only when QUEUETY_GALERA_MODES is set,
// measures the workers writing through one node, spread over the three,
// and node1 as a single server (see docs/scaling-out.md).
//
// They skip when MariaDB, the Galera provider or rsync is missing, and
// fail instead when CI=true.
package cluster
