package cli_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// An application's worker binary: its handlers, a command of its own,
// limits for its workers and an observer. Its usage, errors and shell
// completion say acme-worker.
func ExampleMain_options() {
	reg := queuety.NewRegistry()
	reg.HandleJob("send_email", func(ctx context.Context, p queuety.Payload) error { return nil })

	reindex := &cli.Command{
		Name:     "reindex",
		Summary:  "rebuild the search index",
		Examples: []string{"acme-worker reindex --full"},
		Setup: func(fs *flag.FlagSet) cli.RunFunc {
			full := fs.Bool("full", false, "rebuild every document")
			return func(e *cli.Env, _ []string) error {
				_, err := fmt.Fprintln(e.Stdout, "reindexed; full:", *full)
				return err
			}
		},
	}
	os.Exit(cli.Main(reg,
		cli.WithName("acme-worker"),
		cli.WithCommands(reindex),
		cli.WithWorkerOptions(worker.RateLimit("send_email", 100, time.Minute), worker.GroupLimit("smtp", 4)),
		cli.WithObserver(observe.Nop{}),
	))
}
