package cli

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// shells are the shells completion writes scripts for.
var shells = []string{"bash", "zsh", "fish", "powershell"}

func completionCommand() *Command {
	return &Command{
		Name:    "completion",
		Args:    "SHELL",
		Summary: "print a bash, zsh, fish or powershell completion script for commands, flags and their values",
		Help: `SHELL is bash, zsh, fish or powershell. Load the script in the current
shell, or install it where your shell looks:

  bash:        source <(queuety-worker completion bash)
               queuety-worker completion bash > /etc/bash_completion.d/queuety-worker
  zsh:         source <(queuety-worker completion zsh)
  fish:        queuety-worker completion fish > ~/.config/fish/completions/queuety-worker.fish
  powershell:  queuety-worker completion powershell | Out-String | Invoke-Expression

The script asks the program for the words that fit (queuety-worker
__complete ...), so it completes the values of flags too: statuses, log
levels, output formats, the handlers this binary has, and the queues of
the store the command line names (looked up for at most a second; no
error is shown when the store cannot be reached).`,
		Examples: []string{Program + " completion bash > /etc/bash_completion.d/" + Program},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				root := e.app.root
				switch args[0] {
				case "bash":
					return root.GenBashCompletionV2(e.Stdout, true)
				case "zsh":
					return root.GenZshCompletion(e.Stdout)
				case "fish":
					return root.GenFishCompletion(e.Stdout, true)
				case "powershell":
					return root.GenPowerShellCompletionWithDesc(e.Stdout)
				}
				return Usagef("unknown shell %q: want %s", args[0], orList(shells))
			}
		},
	}
}

// completer returns the words that may complete a flag's value or an
// argument, given the words so far.
type completer func(a *app, toComplete string) []string

// words completes from a fixed list.
func words[T ~string](list ...T) completer {
	return func(*app, string) []string {
		out := make([]string, len(list))
		for i, v := range list {
			out[i] = string(v)
		}
		return out
	}
}

// flagValues are the completions of flag values: by command path and flag
// name, with "*" for every command that has the flag.
var flagValues = map[[2]string]completer{
	{"*", "log-level"}:              words("debug", "info", "warn", "error"),
	{"*", "log-format"}:             words("text", "json"),
	{"*", "format"}:                 words("table", "json"),
	{"*", "dsn"}:                    words("sqlite://", "mysql://"),
	{"*", "queue"}:                  queueNames,
	{"*", "queues"}:                 queueNames,
	{"*", "handler"}:                handlerNames,
	{"job list", "status"}:          words(jobStatuses...),
	{"workflow list", "status"}:     words(workflowStatuses...),
	{"machine list", "status"}:      words(queuetytype.MachineRunning, queuetytype.MachineWaitingEvent, queuetytype.MachineCompleted, queuetytype.MachineFailed, queuetytype.MachinePaused, queuetytype.MachineCancelled),
	{"log list", "event"}:           words(logEvents...),
	{"dispatch", "priority"}:        words("low", "normal", "high", "urgent"),
	{"schedule add", "overlap"}:     words(queuetytype.OverlapAllow, queuetytype.OverlapSkip, queuetytype.OverlapBuffer),
	{"schedule add", "catch-up"}:    words(queuetytype.CatchUpOnce, queuetytype.CatchUpAll, queuetytype.CatchUpNone),
	{"work", "php-callbacks"}:       queueNames,
	{"work", "php-batch-callbacks"}: queueNames,
}

// argValues complete the first argument of a command.
var argValues = map[string]completer{
	"completion":   words(shells...),
	"dispatch":     handlerNames,
	"schedule add": handlerNames,
	"queue pause":  queueNames,
	"queue resume": queueNames,
}

// completionTimeout bounds the store lookups of a completion request.
const completionTimeout = time.Second

// handlerNames are the handlers of the registry.
func handlerNames(a *app, _ string) []string { return a.env.Registry.Names() }

// queueNames are the queues of the store the command line names; none
// when it cannot be opened within completionTimeout. Nothing is logged:
// a completion must not print, and an error could name the store.
func queueNames(a *app, _ string) []string {
	e := *a.env
	e.logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(e.Ctx, completionTimeout)
	defer cancel()
	e.Ctx = ctx
	type result struct{ names []string }
	done := make(chan result, 1)
	go func() { // the MySQL driver's dial may not heed ctx at once
		c, err := e.Open(queuety.SkipMigrate())
		if err != nil {
			done <- result{}
			return
		}
		defer c.Close()
		rows, err := queueRows(ctx, c)
		if err != nil {
			done <- result{}
			return
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.Queue)
		}
		done <- result{names}
	}()
	select {
	case r := <-done:
		return r.names
	case <-ctx.Done():
		return nil
	}
}

// addCompletions registers the value completions on the command tree.
func (a *app) addCompletions() {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		path := subPathOf(c)
		if fn, ok := argValues[path]; ok {
			c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveDefault
				}
				return fn(a, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
		}
		flags := c.LocalNonPersistentFlags()
		if c == a.root {
			flags = c.PersistentFlags()
		}
		for key, fn := range flagValues {
			if key[0] != path && key[0] != "*" || flags.Lookup(key[1]) == nil || flags.Lookup(key[1]).NoOptDefVal != "" {
				continue
			}
			if key[0] == "*" && flagValues[[2]string{path, key[1]}] != nil {
				continue // the command's own list
			}
			fn := fn
			directive := cobra.ShellCompDirectiveNoFileComp
			if key[1] == "dsn" {
				directive |= cobra.ShellCompDirectiveNoSpace
			}
			_ = c.RegisterFlagCompletionFunc(key[1], func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return fn(a, ""), directive
			})
		}
	}
	walk(a.root)
}
