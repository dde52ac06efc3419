// Package cli is the queuety-worker command line: work, flush, migrate,
// status, dispatch, queue, job, workflow, signal, schedule, log, metrics,
// discover, demo, bench and version. Every `wp queuety` verb of Queuety
// PHP has an equivalent; docs/operations.md maps them.
//
// The whole CLI is a library so that an application can build its own
// worker binary with its handlers registered:
//
//	func main() {
//		reg := queuety.NewRegistry()
//		reg.HandleStep("App\\Steps\\FetchData", fetchData)
//		reg.HandleJob("send_email", sendEmail)
//		os.Exit(cli.Main(reg))
//	}
//
// Options add to it: commands of its own (WithCommands), options for the
// workers of work and flush such as rate limits and cost budgets
// (WithWorkerOptions), an instrumentation observer (WithObserver). Its
// usage, errors and completion scripts use the name it runs as (the base
// name of os.Args[0], or WithName).
//
// cmd/queuety-worker is exactly that with a nil registry: it has no user
// handlers, so its `work` runs the sweeps and the engine's internal steps
// (delays, signal waits) and leaves every other job for a worker that has
// its handler (a worker never buries a job because it lacks the handler).
//
// # Store selection
//
// Every command that touches the queue opens a store, chosen by, in order:
// --dsn, --wp-config (a WordPress wp-config.php, whose DB_* constants and
// $table_prefix give a MySQL DSN; getenv(), getenv_docker(), $_ENV[...] and
// the like are evaluated with the worker's environment), the QUEUETY_DSN
// environment variable,
// and finally sqlite://queuety.db. Giving both --dsn and --wp-config is a
// usage error. Stores are migrated when opened; `migrate` does only that.
//
// # Flags and exit codes
//
// The global flags (--dsn, --wp-config, --json, --log-level, --log-format) may appear
// before or after the command name, and command flags may follow the
// positional arguments. Flags may be spelled with one dash or two (-once,
// --once) and take their value after a space or "=". A mistyped command or
// flag is answered with the nearest ones. Errors are printed as one line
// on stderr (one JSON object with --json). The exit
// code is 0 on success, 2 for usage errors (unknown commands or flags, bad
// arguments, invalid JSON) and 1 for runtime errors (the store cannot be
// opened, the workflow is not in a state the operation applies to, ...).
//
// `completion bash|zsh|fish|powershell` prints a completion script that
// completes commands, flags and their values: statuses, levels, formats,
// the registry's handlers and the queues of the store.
//
// Logs go to stderr through a slog text handler, or a JSON handler with
// --log-format json (one object per line). The default level is info
// for `work`, error for `demo` (which prints its own report) and warn for
// the other commands.
//
// # Adding a command
//
// Commands are listed in one table, in commands.go; an application adds
// its own with WithCommands. A command is a *Command with a name, a
// one-line summary, usage text with examples, and either subcommands or a
// Setup function that declares its flags on a flag.FlagSet and returns the
// function that runs it:
//
//	{Name: "hello", Summary: "print a greeting", Args: "NAME", MinArgs: 1, MaxArgs: 1,
//		Setup: func(fs *flag.FlagSet) RunFunc {
//			shout := fs.Bool("shout", false, "print in capitals")
//			return func(e *Env, args []string) error { ... }
//		}},
//
// A RunFunc gets an *Env (context, output writers, the registry, the
// parsed global flags and Env.Open to open the store) and the positional
// arguments. It returns an error made with Usagef for a usage problem and
// any other error for a runtime failure. The table is run by
// github.com/spf13/cobra: it finds the command, parses the flags, prints
// the help and answers the completion scripts.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/queuety/queuety-go/internal/buildinfo"
	"github.com/queuety/queuety-go/internal/wpconfig"
	"github.com/queuety/queuety-go/queuety"

	// The CLI serves every store.
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/postgres"
	"github.com/queuety/queuety-go/store/sqlite"
)

// Program is the program name usage and error messages use by default:
// Main takes the name it runs as, and WithName sets one.
const Program = "queuety-worker"

// DefaultDSN is the store used when neither --dsn, --wp-config nor
// QUEUETY_DSN names one.
const DefaultDSN = "sqlite://queuety.db"

// EnvDSN is the environment variable read when --dsn is not given.
const EnvDSN = "QUEUETY_DSN"

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // runtime error
	ExitUsage   = 2 // usage error
)

// Main runs the CLI on os.Args with the handlers in reg (nil for none) and
// the options, and returns the exit code. Call it as
// os.Exit(cli.Main(reg)). The program name defaults to the base name of
// os.Args[0] (see WithName).
//
// Unless the GOGC environment variable is set, Main sets the garbage
// collector's target to WorkerGCPercent (see there).
func Main(reg *queuety.Registry, opts ...Option) int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(WorkerGCPercent)
	}
	if len(os.Args) > 0 {
		name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
		opts = append([]Option{WithName(name)}, opts...)
	}
	return Run(context.Background(), os.Args[1:], reg, os.Stdout, os.Stderr, opts...)
}

// WorkerGCPercent is the garbage collector target (GOGC) of programs run
// through Main. A worker's live heap is small (a few MiB: the claimed jobs
// and their results) while it allocates a few KiB per job, so with Go's
// default of 100 it collects tens of times a second under load, and each
// collection has costs of its own that do not shrink with the heap. At
// 400 it collects about a quarter as often, for a few MiB more memory
// (bench's rss-drain-1w). Set GOGC to choose otherwise; an application
// that runs workers in its own program can do the same with
// debug.SetGCPercent.
const WorkerGCPercent = 400

// Run runs the CLI on args (without the program name) with the options
// and returns the exit code. Output goes to stdout, errors and logs to
// stderr. Cancelling ctx stops long-running commands (work, demo) as
// SIGINT or SIGTERM does.
func Run(ctx context.Context, args []string, reg *queuety.Registry, stdout, stderr io.Writer, opts ...Option) (code int) {
	if reg == nil {
		reg = queuety.NewRegistry()
	}
	if Version != "" {
		buildinfo.SetVersion(Version) // what `version` prints and workers register
	}
	cfg := newConfig(opts)
	e := &Env{Ctx: ctx, Stdout: stdout, Stderr: stderr, Registry: reg, program: cfg.name}
	defer func() {
		// A bug must still end in one line and an exit code, not a stack trace.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "%s: internal error: %v\n", cfg.name, r)
			code = ExitFailure
		}
	}()
	a, err := newApp(e, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cfg.name, err)
		return ExitFailure
	}
	e.app = a
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		args = normalizeCompletion(a.root, args)
	} else {
		args = normalize(a.root, args, true)
	}
	a.root.SetArgs(args)
	return report(e, a.root.ExecuteContext(ctx))
}

// report prints err (if any) as one line and returns the exit code.
func report(e *Env, err error) int {
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ue *UsageError
	var de *dataError
	switch {
	case errors.As(err, &ue):
		code = ExitUsage
	case errors.As(err, &de):
		// bad data read from a file is not a command-line mistake
	case errors.Is(err, queuetytype.ErrInvalidArgument), errors.Is(err, queuetytype.ErrInvalidTimeout):
		code = ExitUsage
	}
	msg := cleanError(err)
	prog := e.Program()
	if ue != nil {
		if ue.cmd != "" {
			prog += " " + ue.cmd
			msg = fmt.Sprintf("%s (see '%s -h')", msg, prog)
		} else {
			msg = fmt.Sprintf("%s (see '%s help')", msg, e.Program())
		}
	}
	if e.Globals.JSON {
		// With --json, errors are JSON too: one object on stderr.
		doc := map[string]any{"error": map[string]any{"message": msg, "kind": errorKind(err, ue != nil), "exit_code": code, "command": prog}}
		if b, jerr := json.Marshal(doc); jerr == nil {
			fmt.Fprintln(e.Stderr, string(b))
			return code
		}
	}
	fmt.Fprintf(e.Stderr, "%s: %s\n", prog, msg)
	return code
}

// errorKind classifies an error for --json output: usage, invalid_data,
// invalid_argument, not_found, invalid_state, stale_attempt or failure.
func errorKind(err error, usage bool) string {
	var de *dataError
	switch {
	case usage:
		return "usage"
	case errors.As(err, &de):
		return "invalid_data"
	case errors.Is(err, queuetytype.ErrInvalidArgument), errors.Is(err, queuetytype.ErrInvalidTimeout):
		return "invalid_argument"
	case errors.Is(err, queuetytype.ErrNotFound):
		return "not_found"
	case errors.Is(err, queuetytype.ErrInvalidState):
		return "invalid_state"
	case errors.Is(err, queuetytype.ErrStaleAttempt):
		return "stale_attempt"
	}
	return "failure"
}

// cleanError flattens an error to one line and drops the repeated
// "queuety: " prefixes that wrapped library errors carry, and the subject
// a wrapped error repeats ("retry job 7: job 7: not found" reads "retry
// job 7: not found").
func cleanError(err error) string {
	msg := strings.ReplaceAll(err.Error(), "queuety: ", "")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = dropRepeatedSubject(msg)
	if msg == "" {
		msg = "unknown error"
	}
	return msg
}

// dropRepeatedSubject drops each ": "-separated part of msg, except the
// last, that only repeats the end of the part before it.
func dropRepeatedSubject(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for i, p := range parts[1:] {
		prev := out[len(out)-1]
		last := i == len(parts)-2
		if !last && p != "" && (prev == p || strings.HasSuffix(prev, " "+p)) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// dataError marks a problem with data a command read from a file or
// standard input, not with its command line: it exits with code 1 even
// when it wraps ErrInvalidArgument.
type dataError struct{ err error }

func (d *dataError) Error() string { return d.err.Error() }
func (d *dataError) Unwrap() error { return d.err }

// UsageError is a problem with the command line; it exits with code 2.
type UsageError struct {
	msg string
	cmd string // the command path, for the help hint
}

// Error returns the usage message.
func (e *UsageError) Error() string { return e.msg }

// Usagef returns a usage error (exit code 2).
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// Globals are the flags every command accepts.
type Globals struct {
	DSN      string // --dsn
	WPConfig string // --wp-config
	JSON     bool   // --json
	LogLevel string // --log-level ("" = the command's default)
	// LogFormat is --log-format: "text" (the default, "" too) or "json".
	LogFormat string
	// Format is --format, wp queuety's spelling: "table" (the default, ""
	// too) or "json", which sets JSON.
	Format string
}

// addGlobals declares the global flags on fs, bound to g (so values given
// before the command name carry over).
func addGlobals(fs *flag.FlagSet, g *Globals) {
	fs.StringVar(&g.DSN, "dsn", g.DSN, "store DSN: sqlite://FILE, mysql://USER:PASS@HOST:3306/DB?prefix=wp_ or a go-sql-driver DSN\n(default: $"+EnvDSN+", else "+DefaultDSN+")")
	fs.StringVar(&g.WPConfig, "wp-config", g.WPConfig, "read the MySQL settings and $table_prefix from this WordPress `wp-config.php` (getenv() and getenv_docker() are read from this process's environment)")
	fs.BoolVar(&g.JSON, "json", g.JSON, "print JSON instead of text")
	fs.StringVar(&g.Format, "format", g.Format, "output `format`, as wp queuety's --format: table (the default) or json (as --json)")
	fs.StringVar(&g.LogLevel, "log-level", g.LogLevel, "log `level` on stderr: debug, info, warn or error\n(default: info for work, error for demo, warn otherwise)")
	fs.StringVar(&g.LogFormat, "log-format", g.LogFormat, "log `format` on stderr: text or json (one JSON object per line) (default text)")
}

// Env is what a command runs with.
type Env struct {
	Ctx      context.Context
	Stdout   io.Writer
	Stderr   io.Writer
	Registry *queuety.Registry
	Globals  Globals
	// DefaultLogLevel applies when --log-level is not given.
	DefaultLogLevel slog.Level

	logger  *slog.Logger
	program string
	app     *app
}

// Program returns the name the program runs as (see WithName).
func (e *Env) Program() string { return orString(e.program, Program) }

// Logger returns the slog logger on stderr at the chosen level.
func (e *Env) Logger() *slog.Logger {
	if e.logger == nil {
		level := e.DefaultLogLevel
		if e.Globals.LogLevel != "" {
			level, _ = parseLogLevel(e.Globals.LogLevel) // validated at parse time
		}
		opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationAsString}
		if e.Globals.LogFormat == "json" { // validated at parse time
			e.logger = slog.New(slog.NewJSONHandler(e.Stderr, opts))
		} else {
			e.logger = slog.New(slog.NewTextHandler(e.Stderr, opts))
		}
	}
	return e.logger
}

// durationAsString writes a time.Duration attribute as its String form
// ("30s", "1.5ms"), as the text format does, instead of the integer
// nanoseconds slog's JSON handler writes.
func durationAsString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, Usagef("--log-level %q: want debug, info, warn or error", s)
}

// ResolveDSN returns the DSN the global flags and the environment select,
// and a short description of where it came from for error messages (never
// the DSN itself, which may hold a password).
func (e *Env) ResolveDSN() (dsn, source string, err error) {
	g := e.Globals
	switch {
	case g.DSN != "" && g.WPConfig != "":
		return "", "", Usagef("--dsn and --wp-config both name a store; give one of them")
	case g.DSN != "":
		return g.DSN, "--dsn", nil
	case g.WPConfig != "":
		cfg, err := wpconfig.ParseFile(g.WPConfig)
		if err != nil {
			return "", "", fmt.Errorf("read --wp-config: %w", err)
		}
		return cfg.URL(), "--wp-config " + g.WPConfig, nil
	}
	if v := strings.TrimSpace(os.Getenv(EnvDSN)); v != "" {
		return v, "$" + EnvDSN, nil
	}
	return DefaultDSN, "the default " + DefaultDSN, nil
}

// Open opens the selected store for an operator command, applying
// migrations unless opts include queuety.SkipMigrate, with the CLI's
// logger. It never creates a database: an embedded store whose file does
// not exist is an error (a mistyped path must not look like an empty
// queue). Commands that may create the store use OpenOrCreate.
func (e *Env) Open(opts ...queuety.Option) (*queuety.Client, error) {
	dsn, source, err := e.ResolveDSN()
	if err != nil {
		return nil, err
	}
	if err := mustExist(dsn, e.Program()); err != nil {
		return nil, fmt.Errorf("cannot open the store (from %s): %w", source, err)
	}
	return e.OpenDSN(dsn, source, opts...)
}

// OpenOrCreate is Open for the commands that may create the store:
// migrate and work (demo opens its own).
func (e *Env) OpenOrCreate(opts ...queuety.Option) (*queuety.Client, error) {
	dsn, source, err := e.ResolveDSN()
	if err != nil {
		return nil, err
	}
	return e.OpenDSN(dsn, source, opts...)
}

// mustExist reports an embedded store whose database file does not exist.
// Server stores need no check: connecting to a database that does not
// exist fails on its own.
func mustExist(dsn, program string) error {
	if driver.SchemeOf(dsn) != "sqlite" {
		return nil
	}
	cfg, err := sqlite.ParseDSN(dsn)
	if err != nil {
		return err
	}
	if cfg.Path == ":memory:" {
		return nil
	}
	if _, err := os.Stat(cfg.Path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no database at %s: create it with `%s migrate` (or `%s work`)", cfg.Path, program, program)
	} else if err != nil {
		return err
	}
	return nil
}

// OpenDSN opens a given DSN; source says where it came from.
func (e *Env) OpenDSN(dsn, source string, opts ...queuety.Option) (*queuety.Client, error) {
	opts = append([]queuety.Option{queuety.WithLogger(e.Logger())}, opts...)
	c, err := queuety.Open(e.Ctx, dsn, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot open the store (from %s): %w", source, err)
	}
	return c, nil
}
