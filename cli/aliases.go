package cli

import (
	"fmt"
	"io"
	"strings"
)

// alias is a spelling of a Queuety PHP `wp queuety` command that names a
// queuety-worker command by another path, so scripts written for WP-CLI
// run with the program name changed: `wp queuety pause emails` is
// `queuety-worker pause emails`, which runs `queue pause emails`.
type alias struct {
	group  string // the group it is typed in: "" for the top level, "log"
	name   string // the word typed; "" for the group's own name ("log" alone)
	target string // the subcommand path of the group it runs ("job list")
}

// aliases are every `wp queuety` spelling whose queuety-worker command has
// another path. The other verbs are spelled the same in both.
var aliases = []alias{
	{"", "list", "job list"},
	{"", "inspect", "job show"},
	{"", "retry", "job retry"},
	{"", "retry-buried", "job retry-buried"},
	{"", "bury", "job bury"},
	{"", "delete", "job delete"},
	{"", "recover", "job recover"},
	{"", "purge", "job purge"},
	{"", "pause", "queue pause"},
	{"", "resume", "queue resume"},
	// `wp queuety log [--job=<id>] ...` lists log rows: the group alone,
	// or followed by a flag, runs `log list`.
	{"log", "", "list"},
}

// aliasWords returns the subcommand words an alias typed in group (the
// path of the group below the program, space-separated) stands for; nil
// when name is no alias there. The name "" is the group's default
// subcommand, run when it is given none.
func aliasWords(group, name string) []string {
	for _, a := range aliases {
		if a.group == group && a.name == name {
			return strings.Fields(a.target)
		}
	}
	return nil
}

// aliasNamed reports whether name is an alias at the top level.
func aliasNamed(name string) bool { return aliasWords("", name) != nil }

// printAliases lists the aliases typed in groupPath, for the group's usage.
func printAliases(w io.Writer, groupPath string) {
	var lines []string
	for _, a := range aliases {
		switch {
		case a.group == groupPath && a.name != "":
			lines = append(lines, fmt.Sprintf("  %s = %s", a.name, a.target))
		case a.group == groupPath:
			lines = append(lines, fmt.Sprintf("  (no command, or flags only) = %s", a.target))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nQueuety PHP spellings (wp queuety VERB):\n%s\n", strings.Join(lines, "\n"))
	}
}

// writeAliasesMarkdown writes the alias table of the command reference.
func writeAliasesMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## Queuety PHP spellings\n\n")
	fmt.Fprintf(w, "A `wp queuety` command line runs with `wp queuety` replaced by `%s` (flags as the verb table in docs/operations.md notes; `--format=json` is `--json`). These spellings name another command:\n\n", Program)
	fmt.Fprintf(w, "| `wp queuety` | runs |\n| --- | --- |\n")
	for _, a := range aliases {
		typed := strings.TrimSpace(a.group + " " + a.name)
		target := strings.TrimSpace(a.group + " " + a.target)
		if a.name == "" {
			typed += " [flags]"
			target += " [flags]"
		}
		fmt.Fprintf(w, "| `%s` | `%s` |\n", typed, target)
	}
}
