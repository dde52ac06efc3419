package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// environment lists the environment variables the commands read, for the
// program's help.
var environment = [][2]string{
	{EnvDSN, "the store when neither --dsn nor --wp-config is given (else " + DefaultDSN + ")"},
	{EnvMaxExecutionTime, "work --max-execution-time in seconds, when the flag is not given"},
	{EnvWebhookAllow, "work and flush --webhook-allow, when the flag is not given"},
	{EnvMetricsToken, "the bearer token of work --metrics-listen"},
	{EnvMetricsBasicAuth, "the USER:PASS of work --metrics-listen"},
	{EnvUIToken, "the bearer token of ui"},
	{EnvUIBasicAuth, "the USER:PASS of ui"},
	{"GOGC", fmt.Sprintf("the garbage collector's target (default %d)", WorkerGCPercent)},
}

// printHelp writes the usage of c: synopsis, description, subcommands,
// wp queuety spellings, flags and examples.
func (a *app) printHelp(w io.Writer, c *cobra.Command) {
	spec := a.specs[c]
	if spec == nil { // help itself
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.UseLine(), capitalize(c.Short))
		return
	}
	root := c == a.root
	if c.HasSubCommands() {
		fmt.Fprintf(w, "Usage: %s COMMAND [ARGS] [flags]\n\n%s\n", c.CommandPath(), capitalize(c.Short))
	} else {
		fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n", c.UseLine(), capitalize(c.Short))
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", c.Long)
	}
	if c.HasSubCommands() {
		fmt.Fprintf(w, "\nCommands:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range spec.Sub {
			syn := s.Name
			if s.Args != "" {
				syn += " " + s.Args
			}
			fmt.Fprintf(tw, "  %s\t%s\n", syn, a.rename(s.Summary))
		}
		if root {
			fmt.Fprintf(tw, "  help [COMMAND]\t%s\n", a.help.Short)
		}
		tw.Flush()
		printAliases(w, a.subPath(c))
	}
	switch {
	case root:
		fmt.Fprintf(w, "\nGlobal flags (before or after the command):\n%s", flagUsages(c.PersistentFlags(), c.LocalNonPersistentFlags()))
	case !c.HasSubCommands():
		if own := flagUsages(c.LocalNonPersistentFlags()); own != "" {
			fmt.Fprintf(w, "\nFlags:\n%s", own)
		}
		fmt.Fprintf(w, "\nGlobal flags:\n%s", flagUsages(a.root.PersistentFlags()))
	}
	if len(spec.Examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, x := range spec.Examples {
			fmt.Fprintf(w, "  %s\n", a.rename(x))
		}
	}
	if root {
		fmt.Fprintf(w, "\nEnvironment:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, v := range environment {
			fmt.Fprintf(tw, "  %s\t%s\n", v[0], v[1])
		}
		tw.Flush()
	}
	if c.HasSubCommands() {
		fmt.Fprintf(w, "\nRun '%s COMMAND -h' on any command for its flags and examples.\n", c.CommandPath())
	}
}

// flagUsages lists the flags of the sets (but --help), sorted, each with
// its usage indented on the lines below.
func flagUsages(sets ...*pflag.FlagSet) string {
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && all.Lookup(f.Name) == nil {
				all.AddFlag(f)
			}
		})
	}
	var b strings.Builder
	all.VisitAll(func(f *pflag.Flag) {
		typ, usage := pflag.UnquoteUsage(f)
		if typ == "bool" {
			typ = ""
		}
		head := "  --" + f.Name
		if typ != "" {
			head += " " + typ
		}
		if f.DefValue != "" && f.DefValue != "false" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(&b, "%s\n", head)
		for _, l := range strings.Split(usage, "\n") {
			fmt.Fprintf(&b, "        %s\n", l)
		}
	})
	return b.String()
}

// WriteMarkdown writes the reference of every command (synopsis, help,
// flags, examples) as Markdown, from the command table; docs/cli.md is its
// output.
func WriteMarkdown(w io.Writer) {
	a, err := newApp(&Env{}, newConfig(nil))
	if err != nil {
		panic(err) // the built-in table is fixed
	}
	fmt.Fprintf(w, "# `%s` command reference\n\n", Program)
	fmt.Fprintf(w, "Generated from the command table (`go test ./cli -run TestCLIReference -update`); `%s help COMMAND` prints the same.\n", Program)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			fmt.Fprintf(w, "\n## %s\n\n```\n", a.subPath(c))
			a.printHelp(w, c)
			fmt.Fprintf(w, "```\n")
			return
		}
		for _, s := range a.specs[c].Sub {
			for _, sc := range c.Commands() {
				if a.specs[sc] == s {
					walk(sc)
				}
			}
		}
	}
	walk(a.root)
	writeAliasesMarkdown(w)
	fmt.Fprintf(w, "\n## Environment\n\n| variable | what it sets |\n| --- | --- |\n")
	for _, v := range environment {
		fmt.Fprintf(w, "| `%s` | %s |\n", v[0], v[1])
	}
}
