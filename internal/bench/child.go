package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// ChildEnv is the environment variable that makes a program a bench child
// process: it holds the child's configuration, as JSON. The cross-process
// scenarios (latency-xproc, chain-xproc, rss-drain-1w) start this program
// again with it set, so the worker they measure runs in a process of its
// own.
const ChildEnv = "QUEUETY_BENCH_CHILD"

// IsChild reports whether this process was started as a bench child.
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// Child process modes.
const (
	childLatency = "latency" // a worker with the default poll interval, reporting dispatch-to-start latencies
	childDrain   = "drain"   // a worker draining no-op jobs, as drain-1w runs it, reporting its peak RSS
	childChain   = "chain"   // a worker of chainHandlerB with the default poll intervals, reporting its jobs' start and end times
)

// childConfig is what a bench child does.
type childConfig struct {
	Mode        string        `json:"mode"`
	DSN         string        `json:"dsn"`
	Jobs        int           `json:"jobs"` // timed jobs to handle before reporting
	Concurrency int           `json:"concurrency"`
	Timeout     time.Duration `json:"timeout"` // the child gives up after this long
}

// childReport is the child's last line on stdout.
type childReport struct {
	// LatenciesUS are the dispatch-to-start latencies, in microseconds
	// (latency mode).
	LatenciesUS []int64 `json:"latencies_us,omitempty"`
	// StartsUS and EndsUS are the wall-clock start and end times of the
	// chain jobs the child ran, in microseconds since the Unix epoch, by
	// place in the chain (chain mode).
	StartsUS map[int]int64 `json:"starts_us,omitempty"`
	EndsUS   map[int]int64 `json:"ends_us,omitempty"`
	// PeakRSSKiB is the process's peak resident set (VmHWM), in KiB.
	PeakRSSKiB int64 `json:"peak_rss_kib"`
}

// childWarm is the line a latency or chain child prints when it has run
// the warm-up job: its worker is claiming.
const childWarm = "warm"

// ChildMain runs the bench child process ChildEnv describes and writes its
// lines to out: "warm" once its worker ran the warm-up job (latency mode),
// then one JSON report. It returns when the child's work is done, ctx is
// cancelled or the child's timeout passed. A program that offers the
// bench (package cli's bench command does) calls it when IsChild reports
// true, before anything else.
func ChildMain(ctx context.Context, out io.Writer) error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(ChildEnv)), &cfg); err != nil {
		return fmt.Errorf("bench child: bad %s: %w", ChildEnv, err)
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	c, err := open(ctx, cfg.DSN, queuety.SkipMigrate())
	if err != nil {
		return fmt.Errorf("bench child: %w", err)
	}
	defer c.Close()
	var mu sync.Mutex
	println := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, line)
	}
	opts := []worker.Option{worker.Concurrency(cfg.Concurrency), worker.WithLogger(quiet())}
	var rep childReport
	var done <-chan struct{}
	var lat *latencyRecorder
	var drain *countdown
	var chain *chainRecorder
	switch cfg.Mode {
	case childLatency:
		lat = newLatencyRecorder(cfg.Jobs)
		done = lat.done
	case childChain:
		lat = newLatencyRecorder(0) // the warm-up job alone
		chain = newChainRecorder(cfg.Jobs)
		done = chain.done
	case childDrain:
		// As drain-1w runs its workers.
		opts = append(opts, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond))
		drain = newCountdown(cfg.Jobs)
		done = drain.done
	default:
		return fmt.Errorf("bench child: unknown mode %q", cfg.Mode)
	}
	if lat != nil {
		// The parent starts timing once the warm-up job has run here.
		go func() {
			select {
			case <-lat.warm:
				println(childWarm)
			case <-ctx.Done():
			}
		}()
	}
	w := worker.New(c, opts...)
	switch {
	case chain != nil:
		w.HandleJob(latencyHandler, lat.handle)
		w.HandleJob(chainHandlerB, chain.handle)
	case lat != nil:
		w.HandleJob(latencyHandler, lat.handle)
	default:
		w.HandleJob("noop", drain.handle)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	stop()
	if err := <-ran; err != nil {
		return fmt.Errorf("bench child: worker: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("bench child: %w", context.Cause(ctx))
	}
	if chain != nil {
		rep.StartsUS, rep.EndsUS = chain.recorded()
	} else if lat != nil {
		rep.LatenciesUS = lat.micros()
	}
	if rep.PeakRSSKiB, err = peakRSS(); err != nil {
		return fmt.Errorf("bench child: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	println(string(b))
	return nil
}

// countdown is a no-op job handler that closes done once it has run n
// times.
type countdown struct {
	left atomic.Int64
	once sync.Once
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

func (c *countdown) handle(context.Context, queuety.Payload) error {
	if c.left.Add(-1) <= 0 {
		c.once.Do(func() { close(c.done) })
	}
	return nil
}

// peakRSS returns the process's peak resident set size (VmHWM in
// /proc/self/status), in KiB. It fails where /proc is not available.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, errors.New("peak RSS: no VmHWM in /proc/self/status")
}

// selfCommand runs this executable with no arguments (Probes.Child's
// default).
func selfCommand(ctx context.Context) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// child is a running bench child process.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncbuf.Buffer
	cancel context.CancelFunc

	waitOnce sync.Once
	waitErr  error
}

// wait reaps the child once and returns how it ended.
func (ch *child) wait() error {
	ch.waitOnce.Do(func() { ch.waitErr = ch.cmd.Wait() })
	return ch.waitErr
}

// startChild starts a bench child process doing cfg, with the command
// p.Child returns.
func startChild(ctx context.Context, p Probes, cfg childConfig) (*child, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := p.Child(ctx)
	cmd.Env = append(cmd.Environ(), ChildEnv+"="+string(raw))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	ch := &child{cmd: cmd, lines: make(chan string, 16), stderr: &syncbuf.Buffer{}, cancel: cancel}
	cmd.Stderr = ch.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start child process: %w", err)
	}
	go func() {
		defer close(ch.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
	}()
	return ch, nil
}

// next returns the child's next line on stdout, waiting at most timeout.
func (ch *child) next(ctx context.Context, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-ch.lines:
		if !ok {
			err := ch.wait()
			return "", fmt.Errorf("child process ended early (%v); stderr: %s", err, tail(ch.stderr.String()))
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("child process said nothing for %s; stderr: %s", timeout, tail(ch.stderr.String()))
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// report reads the child's JSON report and waits for it to exit.
func (ch *child) report(ctx context.Context, timeout time.Duration) (*childReport, error) {
	line, err := ch.next(ctx, timeout)
	if err != nil {
		return nil, err
	}
	var rep childReport
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		return nil, fmt.Errorf("child process report %q: %w", tail(line), err)
	}
	for range ch.lines {
	}
	if err := ch.wait(); err != nil {
		return nil, fmt.Errorf("child process: %w; stderr: %s", err, tail(ch.stderr.String()))
	}
	return &rep, nil
}

// stop kills the child if it still runs and reaps it.
func (ch *child) stop() {
	ch.cancel()
	for range ch.lines {
	}
	_ = ch.wait()
}

// tail returns the end of s, for error messages.
func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}
