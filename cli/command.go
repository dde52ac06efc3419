package cli

import (
	"errors"
	"flag"
	"strings"
)

// RunFunc runs a command with its positional arguments. The flags declared
// in Setup have been parsed when it is called.
type RunFunc func(e *Env, args []string) error

// Command is one entry of the command table: either a group of
// subcommands (Sub) or a leaf that runs (Setup). An application adds its
// own commands with WithCommands. Flags may be given with one dash or two,
// before or after the arguments; help, suggestions for mistyped names and
// shell completion come with every command.
type Command struct {
	Name     string
	Summary  string   // one line, for the command lists
	Args     string   // synopsis of the positional arguments, e.g. "ID NAME [JSON]"
	Help     string   // optional longer description
	Examples []string // full command lines
	// MinArgs and MaxArgs bound the number of positional arguments
	// (MaxArgs < 0: no upper bound).
	MinArgs, MaxArgs int
	// LogLevel is the default --log-level: "debug", "info", "warn" (the
	// default when empty) or "error".
	LogLevel string
	// Setup declares the command's flags on fs and returns the function
	// that runs it.
	Setup func(fs *flag.FlagSet) RunFunc
	// Sub are the subcommands of a group.
	Sub []*Command
}

func (c *Command) find(name string) *Command {
	for _, s := range c.Sub {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// withCmd attaches the command path to a usage error for the help hint.
func withCmd(err error, cmdPath string) error {
	var ue *UsageError
	if errors.As(err, &ue) && ue.cmd == "" {
		ue.cmd = cmdPath
	}
	return err
}

func checkGlobals(e *Env) error {
	if e.Globals.LogLevel != "" {
		if _, err := parseLogLevel(e.Globals.LogLevel); err != nil {
			return err
		}
	}
	switch e.Globals.Format {
	case "", "table":
	case "json":
		e.Globals.JSON = true
	default:
		return Usagef("--format %q: want table or json (csv and yaml are not supported)", e.Globals.Format)
	}
	if f := e.Globals.LogFormat; f != "" && f != "text" && f != "json" {
		return Usagef("--log-format %q: want text or json", f)
	}
	if e.Globals.DSN != "" && e.Globals.WPConfig != "" {
		return Usagef("--dsn and --wp-config both name a store; give one of them")
	}
	return nil
}

// addRootFlags declares the flags only the program itself takes (before
// any command): --version.
func addRootFlags(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit (as the version command does)")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
