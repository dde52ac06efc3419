// Command stepdep measures the time from a workflow step's return to the
// start of a job that depends on the step's job (queuety.DependsOn with
// the step's JobInfo.JobID), run by another worker that is idle while the
// step works. Both workers use the default poll intervals, on one client
// (in one process) or, with -xproc, on two clients with stores of their
// own, as two processes would. Each workflow is dispatched once the
// previous one's dependent ran. Pass a DSN with a table prefix of its own
// (it is migrated):
//
//	go run ./bench/stepdep -dsn 'mysql://root@127.0.0.1:3306/test?prefix=stepdep_' -n 5 -work 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/postgres"
	"github.com/queuety/queuety-go/worker"
)

func main() {
	dsn := flag.String("dsn", "", "store DSN with a fresh table prefix")
	n := flag.Int("n", 5, "workflows")
	work := flag.Duration("work", 2*time.Second, "how long each step works after dispatching its dependent")
	xproc := flag.Bool("xproc", false, "run the dependent's worker on a client of its own")
	flag.Parse()
	if *dsn == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "stepdep: -dsn is required and -n must be at least 1")
		os.Exit(2)
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := queuety.Open(ctx, *dsn, queuety.WithLogger(quiet))
	must(err)
	defer a.Close()
	b := a
	if *xproc {
		sep := "?"
		if strings.Contains(*dsn, "?") {
			sep = "&"
		}
		// A DSN of its own, so the two clients share no in-process wake-up.
		b, err = queuety.Open(ctx, *dsn+sep+"timeout=12s", queuety.WithLogger(quiet), queuety.SkipMigrate())
		must(err)
		defer b.Close()
	}
	returned := make(chan time.Time, 1)
	started := make(chan time.Time, 1)
	wa := worker.New(a, worker.NoMaintenance(), worker.WithLogger(quiet))
	wa.HandleStep("stepdep.step", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		info, _ := queuety.JobInfoFrom(ctx)
		if _, err := a.Dispatch(ctx, "stepdep.after", nil, queuety.DependsOn(info.JobID)); err != nil {
			return nil, err
		}
		select {
		case <-time.After(*work):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		returned <- time.Now()
		return nil, nil
	})
	wb := worker.New(b, worker.NoMaintenance(), worker.WithLogger(quiet))
	wb.HandleJob("stepdep.after", func(context.Context, queuety.Payload) error {
		started <- time.Now()
		return nil
	})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { wa.Run(rctx); done <- struct{}{} }()
	go func() { wb.Run(rctx); done <- struct{}{} }()
	var got []float64
	for range *n {
		_, err := builder.Workflow("stepdep").Then("stepdep.step").Dispatch(ctx, a, nil)
		must(err)
		end := <-returned
		start := <-started
		got = append(got, float64(start.Sub(end).Microseconds())/1000)
	}
	stop()
	<-done
	<-done
	fmt.Println("step return to dependent start, ms:", got)
	sort.Float64s(got)
	fmt.Printf("n=%d p50=%.2f ms max=%.2f ms\n", len(got), got[len(got)/2], got[len(got)-1])
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "stepdep:", err)
		os.Exit(1)
	}
}
