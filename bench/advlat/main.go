// Command advlat measures the time from a workflow step's return on a
// worker of one client to the next step's start on an idle worker of
// another client: each client has its own store, listener and DSN (so no
// in-process wake-up is shared), as two processes would. Only the
// cross-process wake-up, or a poll, starts the next step. Each workflow
// is dispatched once the previous one finished, -gap apart; the first is
// a warm-up. Pass a DSN with a table prefix of its own (it is migrated):
//
//	go run ./bench/advlat -dsn 'mysql://root@127.0.0.1:3306/test?prefix=advlat_' -n 40 -gap 500ms
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

func main() {
	dsn := flag.String("dsn", "", "mysql DSN with a fresh prefix")
	n := flag.Int("n", 60, "workflows")
	gap := flag.Duration("gap", 500*time.Millisecond, "between workflows")
	flag.Parse()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := queuety.Open(ctx, *dsn+"&timeout=11s", queuety.WithLogger(quiet))
	must(err)
	defer a.Close()
	b, err := queuety.Open(ctx, *dsn+"&timeout=12s", queuety.WithLogger(quiet))
	must(err)
	defer b.Close()
	lat := make(chan time.Duration, *n+1)
	wa := worker.New(a, worker.NoMaintenance(), worker.WithLogger(quiet))
	wa.HandleStep("a.first", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"t": time.Now().UnixMicro()}, nil
	})
	wb := worker.New(b, worker.NoMaintenance(), worker.WithLogger(quiet))
	wb.HandleStep("b.next", func(_ context.Context, s queuety.State) (queuety.State, error) {
		t, _ := s["t"].(float64)
		if i, ok := s["t"].(int64); ok {
			t = float64(i)
		}
		lat <- time.Duration(time.Now().UnixMicro()-int64(t)) * time.Microsecond
		return nil, nil
	})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { wa.Run(rctx); done <- struct{}{} }()
	go func() { wb.Run(rctx); done <- struct{}{} }()
	time.Sleep(2 * time.Second) // both workers idle and listening
	var got []float64
	for i := 0; i <= *n; i++ { // the first is a warm-up
		_, err := builder.Workflow("advlat").Then("a.first").Then("b.next").Dispatch(ctx, a, nil)
		must(err)
		select {
		case d := <-lat:
			if i > 0 {
				got = append(got, float64(d.Microseconds())/1000)
			}
		case <-time.After(time.Minute):
			must(fmt.Errorf("workflow %d: next step did not start", i))
		}
		time.Sleep(*gap)
	}
	stop()
	<-done
	<-done
	sort.Float64s(got)
	p := func(q float64) float64 { return got[int(q*float64(len(got)-1)+0.5)] }
	fmt.Printf("n=%d p50=%.1fms p99=%.1fms max=%.1fms\n", len(got), p(0.5), p(0.99), got[len(got)-1])
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
