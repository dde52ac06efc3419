package cli_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// runWith runs the CLI in-process with options.
func runWith(t *testing.T, reg *queuety.Registry, opts []cli.Option, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut syncbuf.Buffer
	code := cli.Run(ctx, args, reg, &out, &errOut, opts...)
	return result{out.String(), errOut.String(), code}
}

// helloCommand is an application's own command.
func helloCommand() *cli.Command {
	return &cli.Command{
		Name:     "hello",
		Summary:  "print a greeting",
		Args:     "NAME",
		Help:     "Greets NAME, from the application's own command.",
		Examples: []string{cli.Program + " hello ada --shout"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) cli.RunFunc {
			shout := fs.Bool("shout", false, "print in capitals")
			return func(e *cli.Env, args []string) error {
				msg := "hello " + args[0]
				if *shout {
					msg = strings.ToUpper(msg)
				}
				_, err := fmt.Fprintln(e.Stdout, msg)
				return err
			}
		},
	}
}

// TestExtraCommands: a command given with WithCommands is listed by help,
// has its own help, runs with its flags, and is checked as the built-in
// ones are.
func TestExtraCommands(t *testing.T) {
	t.Parallel()
	opts := []cli.Option{cli.WithName("acme-worker"), cli.WithCommands(helloCommand())}
	r := runWith(t, nil, opts, "help")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `\n  hello NAME +print a greeting\n`, r.stdout, "help lists it")

	r = runWith(t, nil, opts, "hello", "-h")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"Usage: acme-worker hello NAME [flags]", "Print a greeting.", "Greets NAME", "--shout", "acme-worker hello ada --shout", "--dsn"} {
		assert.Contains(t, r.stdout, want, "hello -h")
	}

	for _, args := range [][]string{{"hello", "ada", "--shout"}, {"hello", "-shout", "ada"}, {"--shout", "hello", "ada"}} {
		r = runWith(t, nil, opts, args...)
		if args[0] == "--shout" {
			assert.Equal(t, 2, r.code, "%v: a command's flag before the command", args)
			continue
		}
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, "HELLO ADA\n", r.stdout, "%v", args)
	}
	r = runWith(t, nil, opts, "hello")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "acme-worker hello: missing arguments: want NAME (see 'acme-worker hello -h')\n", r.stderr)
	r = runWith(t, nil, opts, "helo", "ada")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `did you mean "hello"?`)

	r = runWith(t, nil, []cli.Option{cli.WithCommands(&cli.Command{Name: "work", Setup: helloCommand().Setup})}, "help")
	assert.Equal(t, 1, r.code, "a built-in command's name")
	assert.Contains(t, r.stderr, `extra command "work": a built-in command (or another extra one) has that name`)
	r = runWith(t, nil, []cli.Option{cli.WithCommands(helloCommand(), helloCommand())}, "hello", "ada")
	assert.Equal(t, 1, r.code, "two extra commands of one name")
	assert.Contains(t, r.stderr, `extra command "hello"`)
}

// TestProgramName: usage, help, errors, version and completion use the
// program name given.
func TestProgramName(t *testing.T) {
	t.Parallel()
	opts := []cli.Option{cli.WithName("acme-worker")}
	r := runWith(t, nil, opts, "help")
	assert.Contains(t, r.stdout, "Usage: acme-worker COMMAND [ARGS] [flags]")
	assert.Contains(t, r.stdout, "  acme-worker work --once --max-time 50s", "examples")
	assert.NotContains(t, r.stdout, cli.Program)
	r = runWith(t, nil, opts, "work", "--help")
	assert.Contains(t, r.stdout, "Usage: acme-worker work [flags]")
	assert.NotContains(t, r.stdout, cli.Program)

	r = runWith(t, nil, opts, "frobnicate")
	assert.Equal(t, 2, r.code)
	assert.True(t, strings.HasPrefix(r.stderr, "acme-worker: unknown command \"frobnicate\""), "%q", r.stderr)
	assert.Contains(t, r.stderr, "(see 'acme-worker help')")
	r = runWith(t, nil, opts, "status", "--bogus")
	assert.True(t, strings.HasPrefix(r.stderr, "acme-worker status: flag provided but not defined: --bogus"), "%q", r.stderr)
	r = runWith(t, nil, opts, "--json", "workflow", "status", "x")
	assert.Contains(t, r.stderr, `"command":"acme-worker workflow status"`, "the JSON error envelope")

	r = runWith(t, nil, opts, "version")
	assert.True(t, strings.HasPrefix(r.stdout, "acme-worker "), "%q", r.stdout)
	r = runWith(t, nil, opts, "completion", "bash")
	assert.Contains(t, r.stdout, "__start_acme-worker")
	assert.Contains(t, r.stdout, "complete -o default -F __start_acme-worker acme-worker")
}

// countingObserver counts the jobs it hears start, by handler.
type countingObserver struct {
	observe.Nop
	mu      sync.Mutex
	started map[string]int
}

func (o *countingObserver) JobStart(ctx context.Context, j observe.Job) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started[j.Handler]++
	return ctx
}

// TestWorkerOptions: the worker options and the observer given to the
// program reach the workers of work and flush: a rate limit of one start
// an hour lets one job of three run, and the observer hears it start.
func TestWorkerOptions(t *testing.T) {
	t.Parallel()
	for _, verb := range [][]string{{"work", "--once", "--max-time", "2s"}, {"flush", "--max-time", "2s"}} {
		t.Run(verb[0], func(t *testing.T) {
			t.Parallel()
			dsn := tempDSN(t)
			reg := queuety.NewRegistry()
			reg.HandleJob("t.limited", func(context.Context, queuety.Payload) error { return nil })
			for range 3 {
				dispatchID(t, dsn, "t.limited")
			}
			obs := &countingObserver{started: map[string]int{}}
			opts := []cli.Option{cli.WithWorkerOptions(worker.RateLimit("t.limited", 1, time.Hour)), cli.WithObserver(obs)}
			r := runWith(t, reg, opts, append([]string{"--dsn", dsn, "--json"}, verb...)...)
			require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Equal(t, 1.0, decode[map[string]any](t, r.stdout)["succeeded"], "%s", r.stdout)
			obs.mu.Lock()
			assert.Equal(t, map[string]int{"t.limited": 1}, obs.started)
			obs.mu.Unlock()
			pending := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "list", "--status", "pending", "--json"))
			assert.Len(t, pending, 2, "the jobs over the limit wait")
		})
	}
}

// TestMainKeepsItsOldCall: cli.Main(nil) still compiles (cmd/queuety-worker
// calls it so), and Run without options is the program as before.
func TestMainKeepsItsOldCall(t *testing.T) {
	var _ func(*queuety.Registry, ...cli.Option) int = cli.Main
	main := func() int { return cli.Main(nil) }
	_ = main
	var out bytes.Buffer
	assert.Equal(t, 0, cli.Run(context.Background(), []string{"version"}, nil, &out, io.Discard))
	assert.True(t, strings.HasPrefix(out.String(), cli.Program+" "))
}
