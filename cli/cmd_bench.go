package cli

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/internal/bench"
)

func benchCommand() *Command {
	return &Command{
		Name:    "bench",
		Summary: "measure dispatch, drain and workflow throughput on a store (median of several runs)",
		Help: `Runs each scenario on fresh tables (a new table prefix on MySQL, a new file on
SQLite, a new schema on PostgreSQL), several times, interleaved, and prints the
median. On MySQL and PostgreSQL it also
measures the raw batched SKIP LOCKED claim on the same tables, the most any
queue could do on that server, and prints each drain as a share of it: the
figure to compare between machines.

Scenarios: dispatch (DispatchMany, jobs/s), drain-<N>w (N workers of one
process, sharing one client, draining
no-op jobs, jobs/s), drain-grouped-<N>w, drain-ratelimited-<N>w and
drain-costbudget-1w (the same drain with a concurrency group, a rate limit
or a cost budget that never binds: the cost of admission),
drain-<N>w-held (drain-<N>w with worker.HoldClaims: one status write a
completed job; MySQL and MariaDB), drain-<N>w-beside and
drain-<N>w-beside-<K>k (run only when named in --scenarios: drain-<N>w
with 50,000, or K thousand, pending jobs of a handler no worker registers
dispatched first on the same queue, ahead in claim order, and left
pending), workflow-3step-4w (3-step workflows, steps/s),
fanout-<W>x<I>-4w (W workflows, each a for_each over I items, run by 4
workers, branches/s; --fanouts; its branch handler takes the state, so the
worker copies it for each branch) and fanout-<W>x<I>-4w-item (the same with
a HandleForEachItem handler, which takes none), raw-sql-ceiling-4c (raw-sql-ceiling-1c
on SQLite, one connection) and, on MySQL, raw-sql-ceiling-logs-4c: the same
hand-written drain writing the two log rows per job that Queuety's
contract asks for, in the completion's transaction, and
raw-sql-ceiling-2step-4c, the hand-written drain claiming as the engine
does (candidates by a plain read, then locked by id), and
raw-sql-min-ceiling-1c and -4c (MySQL only; SQLite has no twin): the
same drain as raw-sql-ceiling-4c on a table of its own, created beside
the store's tables and dropped after the run, with only the columns and
the one index a claim needs, the most the server does with no queue's
row to carry. Drains print their share of raw-sql-ceiling-4c, of the
log ceiling and of the minimal one (-4c, or -1c when only that ran):
"of ceiling", "of +logs", "of min".

--peer river runs River (v0.51.2, on PostgreSQL at --peer-dsn) in the same
run, a round at a time after ours: river-drain-<N>w for each drain-<N>w
that runs (N clients in one process, --concurrency workers each, fetching
again 1 ms after a fetch) and river-bench (one client, 2,000 workers and
River's default fetch settings, as "river bench" runs it). Each drain
prints its ratio to its River twin. The peer is the separate Go module
bench/river of the source tree, built with the go command, so bench runs
it only from a checkout (or with --peer-dir); each run creates and drops a
database of its own on the server.

More scenarios measure other figures:
  latency-inproc, latency-xproc  dispatch-to-start latency p50 and p99 (ms)
      of jobs dispatched one at a time (--latency-rate, --latency-for) to a
      worker with the default poll interval, in this process or in a child
      process (this program started again)
  chain-inproc, chain-xproc  p50 and p99 (ms) from one job's end to the
      next one's start in a 6-job chain whose jobs (2 s of work each)
      alternate between two workers with the default poll intervals, both
      in this process or the second in a child process
  rss-drain-1w     peak RSS (MiB) of a child worker process during drain-1w
  backlog-<N>      median claim transaction (ms) and drain rate (jobs/s) of
      one worker draining --backlog-drain jobs out of N pending (--backlogs;
      the backlog is loaded once, with INSERT ... SELECT)
  sweep-<N>        ms per deadline sweep, watchdog and stale-recovery pass
      over N jobs and N workflows, none expired (--sweep-rows)
Backlog and sweep scenarios load their tables once and repeat their
measurement on them; the others run --runs times, interleaved. --json
prints the whole run, with the machine it ran on.

The tables it creates are dropped afterwards.`,
		Examples: []string{
			Program + " bench --dsn 'mysql://root@127.0.0.1:3306/test'",
			Program + " bench --dsn sqlite://bench.db --jobs 5000 --runs 1",
			Program + " bench --dsn 'mysql://root@127.0.0.1:3306/test' --scenarios drain-1w,raw-sql-ceiling-4c --json",
			Program + " bench --dsn sqlite://bench.db --scenarios latency-inproc,latency-xproc,rss-drain-1w --latency-for 5s",
			Program + " bench --dsn 'mysql://root@127.0.0.1:3306/test' --scenarios backlog-1000000,sweep-1000000 --backlogs 1000000",
			Program + " bench --dsn 'mysql://root@127.0.0.1:3306/test' --peer river --scenarios drain-1w,drain-4w,river-bench,raw-sql-ceiling-4c,raw-sql-min-ceiling-4c",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			jobs := fs.Int("jobs", 20000, "no-op jobs per dispatch and drain run")
			workflows := fs.Int("workflows", 1000, "3-step workflows per workflow run")
			runs := fs.Int("runs", 3, "runs per scenario (the median is reported)")
			concurrency := fs.Int("concurrency", 100, "handler concurrency of each worker (claims take up to this many jobs, at most 100)")
			workers := fs.String("workers", "1,4", "worker counts of the drain scenarios")
			scenarios := fs.String("scenarios", "", "comma-separated scenarios to run (default: all)")
			fanouts := fs.String("fanouts", "1x10000,1000x10", "fan-out scenarios as WORKFLOWSxITEMS, comma-separated (empty: none)")
			probes := benchProbeFlags(fs)
			cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof reads it)")
			peer := fs.String("peer", "", "run another queue's drains in the same run and print ours against them: river (River on PostgreSQL; needs the source tree and the go command)")
			peerDir := fs.String("peer-dir", "", "the peer's module directory (default: bench/<peer> of the source tree around the working directory)")
			peerDSN := fs.String("peer-dsn", bench.DefaultPeerDSN, "the peer's database server")
			return func(e *Env, _ []string) error {
				if bench.IsChild() {
					return bench.ChildMain(e.Ctx, e.Stdout)
				}
				for _, f := range []struct {
					name string
					v    int
				}{{"jobs", *jobs}, {"workflows", *workflows}, {"runs", *runs}, {"concurrency", *concurrency}} {
					if f.v < 1 {
						return Usagef("--%s must be at least 1, got %d", f.name, f.v)
					}
				}
				dsn, _, err := e.ResolveDSN()
				if err != nil {
					return err
				}
				env, err := bench.EnvFor(dsn)
				if err != nil {
					return Usagef("%v", err)
				}
				var ws []int
				for _, part := range strings.Split(*workers, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(part))
					if err != nil || n < 1 {
						return Usagef("--workers: want positive numbers like 1,4, got %q", *workers)
					}
					ws = append(ws, n)
				}
				fos, err := parseFanOuts(*fanouts)
				if err != nil {
					return err
				}
				pr, err := probes()
				if err != nil {
					return err
				}
				cfg := bench.Config{Jobs: *jobs, Workflows: *workflows, Runs: *runs, Workers: ws, Concurrency: *concurrency,
					FanOuts: fos, Scenarios: splitList(*scenarios), Probes: pr}
				switch *peer {
				case "":
				case "river":
					cfg.Peer = &bench.Peer{Name: *peer, Dir: *peerDir, DSN: *peerDSN}
				default:
					return Usagef("--peer: want river, got %q", *peer)
				}
				if !e.Globals.JSON {
					cfg.Progress = e.Stderr
				}
				if *cpuProfile != "" {
					f, err := os.Create(*cpuProfile)
					if err != nil {
						return fmt.Errorf("bench: cpu profile: %w", err)
					}
					defer f.Close()
					if err := pprof.StartCPUProfile(f); err != nil {
						return fmt.Errorf("bench: cpu profile: %w", err)
					}
					defer pprof.StopCPUProfile()
				}
				rep, err := bench.Run(e.Ctx, env, cfg)
				if err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, rep)
				}
				rep.Format(e.Stdout)
				return nil
			}
		},
	}
}

// parseFanOuts reads --fanouts: "1x10000,1000x10".
func parseFanOuts(s string) ([]bench.FanOut, error) {
	var out []bench.FanOut
	for _, part := range splitList(s) {
		w, i, ok := strings.Cut(part, "x")
		nw, err1 := strconv.Atoi(strings.TrimSpace(w))
		ni, err2 := strconv.Atoi(strings.TrimSpace(i))
		if !ok || err1 != nil || err2 != nil || nw < 1 || ni < 1 {
			return nil, Usagef("--fanouts: want WORKFLOWSxITEMS pairs like 1x10000,1000x10, got %q", part)
		}
		out = append(out, bench.FanOut{Workflows: nw, Items: ni})
	}
	return out, nil
}
