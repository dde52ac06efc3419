// Command queuety-worker runs queuety workers and operates the queue from
// the command line. It has no user handlers: its workers run the sweeps and
// the engine's internal steps (delays, signal waits), and every job for
// another handler waits for a worker that has it. Applications build their
// own binary with their handlers through package cli.
//
//	queuety-worker help
//	queuety-worker demo
//	queuety-worker work --once --max-time 50s --wp-config /var/www/html/wp-config.php
package main

import (
	"os"

	"github.com/queuety/queuety-go/cli"
)

func main() { os.Exit(cli.Main(nil)) }
