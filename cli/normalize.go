package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// normalize rewrites a command line into the spelling cobra parses,
// keeping every spelling the command line has accepted (cron lines and
// scripts in the wild use them):
//
//   - a single-dash long flag is a flag: -once, -dsn=x and -dsn x are
//     --once, --dsn=x and --dsn x (the flag package's spelling);
//     -help and --h are --help;
//   - a wp queuety spelling names its command: `pause emails` is
//     `queue pause emails` (aliases.go);
//   - a group with a default subcommand given none runs it: `log --job 5`
//     is `log list --job 5`.
//
// A flag's value is never rewritten, nor anything after "--". The words of
// `help` are resolved as commands are, so `help pause` shows `queue pause`.
func normalize(root *cobra.Command, args []string, withDefault bool) []string {
	out := make([]string, 0, len(args)+2)
	cmd := root
	commandWords := true // the words still name commands
	groupAt := -1        // where in out the last group's word is
	helpMode := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return append(out, args[i:]...)
		case arg == "-h" || arg == "--h" || arg == "-help" || arg == "--help":
			helpMode = true
			out = append(out, "--help")
			continue
		case len(arg) > 1 && arg[0] == '-':
			if arg[1] != '-' {
				arg = "-" + arg
			}
			out = append(out, arg)
			name, _, inline := strings.Cut(arg[2:], "=")
			if f := lookupFlag(cmd, name); f != nil && f.NoOptDefVal == "" && !inline && i+1 < len(args) {
				i++
				out = append(out, args[i]) // the flag's value, as it is
			}
			continue
		}
		if !commandWords || !cmd.HasSubCommands() {
			commandWords = false
			out = append(out, arg)
			continue
		}
		if arg == "help" && cmd == root && !helpMode {
			helpMode = true
			out = append(out, arg)
			continue
		}
		words := []string{arg}
		if target := aliasWords(subPathOf(cmd), arg); target != nil {
			words = target
		}
		for _, w := range words {
			sub := findSub(cmd, w)
			if sub == nil {
				commandWords = false
				break
			}
			cmd = sub
			if cmd.HasSubCommands() {
				groupAt = len(out)
			}
			out = append(out, w)
		}
		if !commandWords {
			out = append(out, arg)
		}
	}
	if def := aliasWords(subPathOf(cmd), ""); def != nil && withDefault && !helpMode && groupAt >= 0 && commandWords {
		out = append(out[:groupAt+1], append(def, out[groupAt+1:]...)...)
	}
	return out
}

// normalizeCompletion normalizes the words before the one being
// completed of a `__complete` request, and leaves that one as typed. The
// default subcommand is added only when a flag is being completed: until
// then the subcommand may still be typed.
func normalizeCompletion(root *cobra.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	last := len(args) - 1
	words := normalize(root, args[1:last], strings.HasPrefix(args[last], "-"))
	return append(append([]string{args[0]}, words...), args[last])
}

// lookupFlag finds a flag of cmd, or of its default subcommand, or a
// persistent flag of a parent.
func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if def := aliasWords(subPathOf(cmd), ""); def != nil {
		if sub := findSub(cmd, def[0]); sub != nil {
			if f := sub.Flags().Lookup(name); f != nil {
				return f
			}
		}
	}
	for c := cmd; c != nil; c = c.Parent() {
		if f := c.Flags().Lookup(name); f != nil {
			return f
		}
		if f := c.PersistentFlags().Lookup(name); f != nil {
			return f
		}
	}
	return nil
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, s := range cmd.Commands() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// subPathOf is the path of cmd below the program.
func subPathOf(cmd *cobra.Command) string {
	var words []string
	for c := cmd; c.HasParent(); c = c.Parent() {
		words = append([]string{c.Name()}, words...)
	}
	return strings.Join(words, " ")
}
