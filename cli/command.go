package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// RunFunc runs a command with its positional arguments. The flags declared
// in Setup have been parsed when it is called.
type RunFunc func(e *Env, args []string) error

// Command is one entry of the command table: either a group of
// subcommands (Sub) or a leaf that runs (Setup).
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

// runCommand parses args for cmd (whose parents are path) and runs it.
func runCommand(e *Env, cmd *Command, args []string, path []string) error {
	path = append(path[:len(path):len(path)], cmd.Name)
	if cmd.Sub != nil {
		return runGroup(e, cmd, args, path)
	}
	name := strings.Join(path, " ")
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addGlobals(fs, &e.Globals)
	run := cmd.Setup(fs)
	cmdPath := strings.Join(path[1:], " ")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printLeafUsage(e.Stdout, cmd, fs, name)
		return errHelpShown
	}
	if err != nil {
		return &UsageError{msg: err.Error(), cmd: cmdPath}
	}
	if err := checkGlobals(e); err != nil {
		return withCmd(err, cmdPath)
	}
	switch {
	case len(pos) < cmd.MinArgs:
		return &UsageError{msg: fmt.Sprintf("missing arguments: want %s", cmd.Args), cmd: cmdPath}
	case cmd.MaxArgs >= 0 && len(pos) > cmd.MaxArgs:
		return &UsageError{msg: fmt.Sprintf("unexpected argument %q", pos[cmd.MaxArgs]), cmd: cmdPath}
	}
	e.DefaultLogLevel, _ = parseLogLevel(orString(cmd.LogLevel, "warn"))
	return withCmd(run(e, pos), cmdPath)
}

// runGroup handles a command with subcommands: leading global flags, help,
// then the subcommand.
func runGroup(e *Env, cmd *Command, args []string, path []string) error {
	name := strings.Join(path, " ")
	cmdPath := strings.Join(path[1:], " ")
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addGlobals(fs, &e.Globals)
	var showVersion *bool
	if len(path) == 1 {
		showVersion = addRootFlags(fs)
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printGroupUsage(e.Stdout, cmd, name, len(path) == 1)
		return errHelpShown
	}
	if err == nil && showVersion != nil && *showVersion {
		if err := checkGlobals(e); err != nil {
			return err
		}
		return printVersion(e, nil)
	}
	def := defaultSub(cmd, cmdPath)
	if err != nil {
		if def != nil { // a flag of the default subcommand: `log --job 5`
			return runCommand(e, def, args, path)
		}
		return &UsageError{msg: err.Error(), cmd: cmdPath}
	}
	rest := fs.Args()
	if len(rest) == 0 && def != nil {
		return runCommand(e, def, args, path)
	}
	if len(rest) == 0 {
		printGroupUsage(e.Stderr, cmd, name, len(path) == 1)
		if len(path) == 1 {
			return Usagef("no command given")
		}
		return &UsageError{msg: "no subcommand given", cmd: cmdPath}
	}
	if len(path) == 1 && rest[0] == "help" {
		return runHelp(e, cmd, rest[1:])
	}
	sub := cmd.find(rest[0])
	if sub == nil {
		if target, via := aliasTarget(cmd, cmdPath, rest[0]); target != nil {
			return runCommand(e, target, rest[1:], append(path[:len(path):len(path)], via...))
		}
		return &UsageError{msg: fmt.Sprintf("unknown command %q (known: %s)", rest[0], strings.Join(names(cmd), ", ")), cmd: cmdPath}
	}
	return runCommand(e, sub, rest[1:], path)
}

// runHelp prints the usage of the command named by args.
func runHelp(e *Env, root *Command, args []string) error {
	cmd, path := root, []string{root.Name}
	for _, a := range args {
		sub := cmd.find(a)
		if sub == nil {
			target, via := aliasTarget(cmd, strings.Join(path[1:], " "), a)
			if target == nil {
				return Usagef("help: unknown command %q", strings.Join(append(path[1:], a), " "))
			}
			sub, path = target, append(path, via...)
			a = target.Name
		}
		cmd, path = sub, append(path, a)
	}
	name := strings.Join(path, " ")
	if cmd.Sub != nil {
		printGroupUsage(e.Stdout, cmd, name, cmd == root)
		return nil
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	addGlobals(fs, &Globals{})
	cmd.Setup(fs)
	printLeafUsage(e.Stdout, cmd, fs, name)
	return nil
}

func names(cmd *Command) []string {
	out := make([]string, len(cmd.Sub))
	for i, s := range cmd.Sub {
		out[i] = s.Name
	}
	return out
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

// parseInterspersed parses flags that may come before, between or after
// the positional arguments ("dispatch send_email '{}' --queue mail"). An
// argument "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// globalFlagNames are the flags addGlobals declares.
var globalFlagNames = map[string]bool{"dsn": true, "wp-config": true, "json": true, "format": true, "log-level": true}

func printLeafUsage(w io.Writer, cmd *Command, fs *flag.FlagSet, name string) {
	synopsis := name
	if cmd.Args != "" {
		synopsis += " " + cmd.Args
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n", synopsis, capitalize(cmd.Summary))
	if cmd.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.Help))
	}
	var own, global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if globalFlagNames[f.Name] {
			global = append(global, f)
		} else {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		printFlags(w, own)
	}
	fmt.Fprintf(w, "\nGlobal flags:\n")
	printFlags(w, global)
	printExamples(w, cmd.Examples)
}

func printGroupUsage(w io.Writer, cmd *Command, name string, root bool) {
	fmt.Fprintf(w, "Usage: %s COMMAND [ARGS] [flags]\n\n%s\n", name, capitalize(cmd.Summary))
	if cmd.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.Help))
	}
	fmt.Fprintf(w, "\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range cmd.Sub {
		syn := s.Name
		if s.Args != "" {
			syn += " " + s.Args
		}
		fmt.Fprintf(tw, "  %s\t%s\n", syn, s.Summary)
	}
	if root {
		fmt.Fprintf(tw, "  help [COMMAND]\tshow the usage of a command\n")
	}
	tw.Flush()
	printAliases(w, strings.Join(strings.Fields(name)[1:], " "))
	if root {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		addGlobals(fs, &Globals{})
		addRootFlags(fs)
		var global []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) { global = append(global, f) })
		fmt.Fprintf(w, "\nGlobal flags (before or after the command):\n")
		printFlags(w, global)
	}
	printExamples(w, cmd.Examples)
	fmt.Fprintf(w, "\nRun '%s -h' on any command for its flags and examples.\n", name+" COMMAND")
}

// addRootFlags declares the flags only the program itself takes (before
// any command): --version.
func addRootFlags(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit (as the version command does)")
}

func printFlags(w io.Writer, flags []*flag.Flag) {
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		typ, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*durationValue); ok && typ == "value" {
			typ = "duration"
		}
		head := "  --" + f.Name
		if typ != "" {
			head += " " + typ
		}
		lines := strings.Split(usage, "\n")
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && !strings.Contains(usage, "(default") {
			lines[len(lines)-1] += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(w, "%s\n", head)
		for _, l := range lines {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
}

func printExamples(w io.Writer, ex []string) {
	if len(ex) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExamples:\n")
	for _, x := range ex {
		fmt.Fprintf(w, "  %s\n", x)
	}
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
