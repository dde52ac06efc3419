package cli

import (
	"flag"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// This file turns the command table into a cobra command tree: cobra
// finds the command, parses the flags (pflag), prints the help through
// help.go, and generates the shell completion scripts and answers their
// requests (complete.go). The table stays the one place that defines a
// command: its words, flags (declared on a flag.FlagSet), help and the
// function that runs it.

// app is one run of the command line.
type app struct {
	env   *Env
	cfg   *config
	root  *cobra.Command
	specs map[*cobra.Command]*Command // the table entry of each command
	help  *cobra.Command
}

// newApp builds the command tree of the table (plus the extra commands
// of cfg) for one run in e.
func newApp(e *Env, cfg *config) (*app, error) {
	a := &app{env: e, cfg: cfg, specs: map[*cobra.Command]*Command{}}
	spec := rootCommand()
	for _, x := range cfg.extra {
		if x == nil || x.Name == "" || (x.Setup == nil && x.Sub == nil) {
			return nil, fmt.Errorf("extra command %v: want a Name and a Setup or Sub", x)
		}
		if spec.find(x.Name) != nil || x.Name == "help" || aliasNamed(x.Name) {
			return nil, fmt.Errorf("extra command %q: a built-in command (or another extra one) has that name", x.Name)
		}
		spec.Sub = append(spec.Sub, x)
	}
	a.root = a.build(spec, nil)
	a.root.Use = cfg.name
	a.root.SilenceErrors, a.root.SilenceUsage = true, true
	a.root.CompletionOptions.DisableDefaultCmd = true
	a.root.SetOut(e.Stdout)
	a.root.SetErr(e.Stderr)
	a.root.SetHelpFunc(func(c *cobra.Command, _ []string) { a.printHelp(c.OutOrStdout(), c) })
	a.root.SetUsageFunc(func(c *cobra.Command) error { a.printHelp(c.OutOrStderr(), c); return nil })
	a.root.SetFlagErrorFunc(a.flagError)

	globals := flag.NewFlagSet(cfg.name, flag.ContinueOnError)
	addGlobals(globals, &e.Globals)
	addPFlags(a.root.PersistentFlags(), globals)
	root := flag.NewFlagSet(cfg.name, flag.ContinueOnError)
	showVersion := addRootFlags(root)
	addPFlags(a.root.Flags(), root)
	groupRun := a.root.RunE
	a.root.RunE = func(c *cobra.Command, args []string) error {
		if *showVersion && len(args) == 0 {
			if err := checkGlobals(e); err != nil {
				return err
			}
			return printVersion(e, nil)
		}
		return groupRun(c, args)
	}

	a.help = &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "show the usage of a command",
		Args:  cobra.ArbitraryArgs,
		RunE:  a.runHelp,
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			target, rest, err := a.root.Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() && s != a.help {
					out = append(out, s.Name()+"\t"+s.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
	a.root.SetHelpCommand(a.help)
	a.addCompletions()
	return a, nil
}

// build makes the cobra command of a table entry and its subcommands.
func (a *app) build(spec *Command, parent *cobra.Command) *cobra.Command {
	use := spec.Name
	if spec.Args != "" {
		use += " " + spec.Args
	}
	c := &cobra.Command{
		Use:                   a.rename(use),
		Short:                 a.rename(spec.Summary),
		Long:                  a.rename(strings.TrimSpace(spec.Help)),
		Args:                  cobra.ArbitraryArgs,
		DisableFlagsInUseLine: true,
	}
	a.specs[c] = spec
	if parent != nil {
		parent.AddCommand(c)
	}
	if spec.Sub != nil {
		c.RunE = a.runGroup
		for _, s := range spec.Sub {
			a.build(s, c)
		}
		return c
	}
	fs := flag.NewFlagSet(spec.Name, flag.ContinueOnError)
	run := spec.Setup(fs)
	addPFlags(c.Flags(), fs)
	e := a.env
	c.RunE = func(c *cobra.Command, args []string) error {
		cmdPath := a.subPath(c)
		if err := checkGlobals(e); err != nil {
			return withCmd(err, cmdPath)
		}
		switch {
		case len(args) < spec.MinArgs:
			return &UsageError{msg: fmt.Sprintf("missing arguments: want %s", spec.Args), cmd: cmdPath}
		case spec.MaxArgs >= 0 && len(args) > spec.MaxArgs:
			return &UsageError{msg: fmt.Sprintf("unexpected argument %q", args[spec.MaxArgs]), cmd: cmdPath}
		}
		e.DefaultLogLevel, _ = parseLogLevel(orString(spec.LogLevel, "warn"))
		return withCmd(run(e, args), cmdPath)
	}
	return c
}

// rename replaces the default program name in a help text with the one
// this program runs as.
func (a *app) rename(s string) string {
	if a.cfg.name == Program {
		return s
	}
	return strings.ReplaceAll(s, Program, a.cfg.name)
}

// subPath is the path of c below the program: "workflow inspect".
func (a *app) subPath(c *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), a.root.Name()), " ")
}

// runGroup runs a group of subcommands given no known subcommand: the
// words given are no command, or none was given.
func (a *app) runGroup(c *cobra.Command, args []string) error {
	cmdPath := a.subPath(c)
	if err := checkGlobals(a.env); err != nil {
		return withCmd(err, cmdPath)
	}
	if len(args) == 0 {
		a.printHelp(a.env.Stderr, c)
		if c == a.root {
			return Usagef("no command given")
		}
		return &UsageError{msg: "no subcommand given", cmd: cmdPath}
	}
	known := a.subNames(c)
	msg := fmt.Sprintf("unknown command %q", args[0])
	if near := nearest(args[0], known); len(near) > 0 {
		msg += "; did you mean " + orList(quoteAll(near)) + "?"
	} else {
		msg += fmt.Sprintf(" (known: %s)", strings.Join(known, ", "))
	}
	return &UsageError{msg: msg, cmd: cmdPath}
}

// subNames lists the subcommands of c, with the aliases typed there.
func (a *app) subNames(c *cobra.Command) []string {
	var out []string
	for _, s := range a.specs[c].Sub {
		out = append(out, s.Name)
	}
	for _, al := range aliases {
		if al.group == a.subPath(c) && al.name != "" {
			out = append(out, al.name)
		}
	}
	return out
}

// runHelp is `help [COMMAND]`.
func (a *app) runHelp(_ *cobra.Command, args []string) error {
	target, rest, err := a.root.Find(args)
	if err != nil || len(rest) > 0 {
		msg := fmt.Sprintf("help: unknown command %q", strings.Join(args, " "))
		if err == nil && len(rest) > 0 {
			if near := nearest(rest[0], a.subNames(target)); len(near) > 0 {
				msg += "; did you mean " + orList(quoteAll(near)) + "?"
			}
		}
		return Usagef("%s", msg)
	}
	a.printHelp(a.env.Stdout, target)
	return nil
}

// flagError turns a flag parsing error into a usage error of command c,
// with the nearest flag names for an unknown one.
func (a *app) flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		msg = "flag provided but not defined: --" + name
		var known []string
		c.Flags().VisitAll(func(f *pflag.Flag) { known = append(known, f.Name) }) // with the inherited ones
		if near := nearest(name, known); len(near) > 0 {
			msg += "; did you mean --" + strings.Join(near, " or --") + "?"
		}
	}
	return &UsageError{msg: msg, cmd: a.subPath(c)}
}

// addPFlags adds the flags of a flag.FlagSet to a pflag set. Setting one
// goes through fs.Set, so fs.Visit still reports the flags given, as the
// commands check (flagGiven).
func addPFlags(to *pflag.FlagSet, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		v := &goFlag{fs: fs, f: f}
		pf := &pflag.Flag{Name: f.Name, Usage: f.Usage, Value: v, DefValue: f.DefValue}
		if v.Type() == "bool" {
			pf.NoOptDefVal = "true"
		}
		switch pf.DefValue {
		case "0s", "0":
			pf.DefValue = "" // no "(default 0s)"
		}
		if strings.Contains(f.Usage, "(default") {
			pf.DefValue = "" // the usage says it
		}
		to.AddFlag(pf)
	})
}

// goFlag is a flag.Flag as a pflag.Value.
type goFlag struct {
	fs *flag.FlagSet
	f  *flag.Flag
}

func (g *goFlag) String() string     { return g.f.Value.String() }
func (g *goFlag) Set(s string) error { return g.fs.Set(g.f.Name, s) }

// Type names the value in the help: bool, string, int, duration, ...
func (g *goFlag) Type() string {
	if b, ok := g.f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "bool"
	}
	t := reflect.TypeOf(g.f.Value)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(strings.TrimSuffix(t.Name(), "Value"), "64")
}

// nearest returns the candidates closest to typed: within an edit
// distance of two (one for words of up to three letters), or starting
// with it; of several, those at the smallest distance.
func nearest(typed string, candidates []string) []string {
	limit := 2
	if len(typed) <= 3 {
		limit = 1
	}
	var out []string
	best := limit + 1
	for _, c := range candidates {
		d := editDistance(typed, c)
		if len(typed) >= 3 && strings.HasPrefix(c, typed) {
			d = min(d, 1)
		}
		switch {
		case c == typed || d > limit || d > best:
		case d < best:
			best, out = d, []string{c}
		default:
			out = append(out, c)
		}
	}
	return out
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions, the commonest typo) of a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// orList joins "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
