package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/queuety/queuety-go/internal/secret"
)

// Environment variables the ui command and work --metrics-listen read
// their credentials from when no flag gives them (a flag shows in the
// process list; the environment and a file do not).
const (
	// EnvUIToken holds the ui command's bearer token.
	EnvUIToken = "QUEUETY_UI_TOKEN"
	// EnvUIBasicAuth holds the ui command's basic authentication, USER:PASS.
	EnvUIBasicAuth = "QUEUETY_UI_BASIC_AUTH"
	// EnvMetricsToken holds the bearer token /metrics requires.
	EnvMetricsToken = "QUEUETY_METRICS_TOKEN"
	// EnvMetricsBasicAuth holds the basic authentication /metrics
	// requires, USER:PASS.
	EnvMetricsBasicAuth = "QUEUETY_METRICS_BASIC_AUTH"
)

// secretFlag is a secret a command takes from --NAME (visible in the
// process list, so it warns), from the file --NAME-file names, or from an
// environment variable.
type secretFlag struct {
	name, env   string
	value, file *string
}

// newSecretFlag registers --name, described by usage, and --name-file,
// which reads the secret (named by noun) from a file.
func newSecretFlag(fs *flag.FlagSet, name, env, usage, noun string) *secretFlag {
	return &secretFlag{name: name, env: env,
		value: fs.String(name, "", usage+" (visible in the process list: prefer $"+env+" or --"+name+"-file)"),
		file:  fs.String(name+"-file", "", "read "+noun+" from the first line of this `file`"),
	}
}

// read returns the secret ("" when none is given) and where it came from.
// A secret on the command line is logged as a warning, without its value.
func (f *secretFlag) read(e *Env) (string, error) {
	switch {
	case *f.value != "" && *f.file != "":
		return "", Usagef("give --%s or --%s-file, not both", f.name, f.name)
	case *f.file != "":
		b, err := os.ReadFile(*f.file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", f.name, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		v := strings.TrimSpace(line)
		if v == "" {
			return "", Usagef("--%s-file %s is empty", f.name, *f.file)
		}
		return v, nil
	case *f.value != "":
		e.Logger().Warn("queuety: a secret given on the command line is visible to other users in the process list; "+
			"give it in $"+f.env+" or a file (--"+f.name+"-file) instead", "flag", "--"+f.name)
		return *f.value, nil
	}
	return strings.TrimSpace(os.Getenv(f.env)), nil
}

// checkToken refuses a weak token with a usage error naming its source.
func checkToken(what, v string) error {
	if err := secret.Check(what, v); err != nil {
		return Usagef("%v", err)
	}
	return nil
}

// splitBasicAuth splits USER:PASS and checks the password's strength.
func splitBasicAuth(what, v string) (user, pass string, err error) {
	user, pass, ok := strings.Cut(v, ":")
	if !ok || user == "" || pass == "" {
		return "", "", Usagef("%s wants USER:PASS, both non-empty", what)
	}
	if err := checkToken(what+"'s password", pass); err != nil {
		return "", "", err
	}
	return user, pass, nil
}
