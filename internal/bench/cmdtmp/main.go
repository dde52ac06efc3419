package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/queuety/queuety-go/internal/bench"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

func main() {
	dsn := flag.String("dsn", "mysql://root@127.0.0.1:3306/test", "")
	jobs := flag.Int("jobs", 20000, "")
	runs := flag.Int("runs", 1, "")
	sc := flag.String("s", "", "")
	conc := flag.Int("c", 16, "")
	flag.Parse()
	env, err := bench.EnvFor(*dsn)
	if err != nil { fmt.Println(err); os.Exit(1) }
	var scs []string
	if *sc != "" { scs = strings.Split(*sc, ",") }
	rep, err := bench.Run(context.Background(), env, bench.Config{DSN: *dsn, Jobs: *jobs, Runs: *runs, Scenarios: scs, Concurrency: *conc, Workflows: 1000, Progress: os.Stdout})
	if err != nil { fmt.Println(err); os.Exit(1) }
	rep.Format(os.Stdout)
}
