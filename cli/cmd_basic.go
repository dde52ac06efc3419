package cli

import (
	"flag"
	"fmt"
	"runtime"
	"time"

	"github.com/queuety/queuety-go/internal/buildinfo"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// Version is the queuety-worker version. Release builds set it with
// -ldflags "-X github.com/queuety/queuety-go/cli.Version=v1.2.3"; otherwise
// the module version from the build information is shown (v0.1.0 for a
// binary installed with go install ...@v0.1.0), with the VCS revision when
// built from a checkout. When set, it is also the version workers report
// in the worker registry (queuety.Version).
var Version = ""

func migrateCommand() *Command {
	return &Command{
		Name:    "migrate",
		Summary: "create Queuety's tables where missing and apply the Go engine's migrations",
		Help: `Safe to run any number of times and from several processes at once. On a
database shared with Queuety PHP, the existing tables are kept and only the
Go engine's nullable columns and tables are added; PHP keeps working.`,
		Examples: []string{
			Program + " migrate --dsn sqlite://queuety.db",
			Program + " migrate --wp-config /var/www/html/wp-config.php",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, _ []string) error {
				c, err := e.OpenOrCreate(queuety.SkipMigrate())
				if err != nil {
					return err
				}
				defer c.Close()
				start := time.Now()
				if err := c.Migrate(e.Ctx); err != nil {
					return fmt.Errorf("migrate: %w", err)
				}
				took := time.Since(start)
				info := c.StoreInfo()
				if e.Globals.JSON {
					return printJSON(e.Stdout, map[string]any{
						"migrated": true, "driver": info.Driver, "server": info.Server, "prefix": info.Prefix,
						"address": info.Address, "warnings": nonNil(info.Warnings), "duration_ms": took.Milliseconds(),
					})
				}
				fmt.Fprintf(e.Stdout, "Migrated the %s store: tables are up to date (%s).\n", info.Driver, took.Round(time.Millisecond))
				tw := newTable(e.Stdout)
				fmt.Fprintf(tw, "  driver\t%s\n", info.Driver)
				fmt.Fprintf(tw, "  server\t%s\n", dash(info.Server))
				fmt.Fprintf(tw, "  address\t%s\n", dash(info.Address))
				fmt.Fprintf(tw, "  table prefix\t%q\n", info.Prefix)
				for _, w := range info.Warnings {
					fmt.Fprintf(tw, "  warning\t%s\n", w)
				}
				return tw.Flush()
			}
		},
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func versionCommand() *Command {
	return &Command{
		Name:     "version",
		Summary:  "print the version",
		Help:     "Also printed by --version. The version is the release the binary was installed at\n(go install ...@v0.1.0), or the checkout's pseudo-version and VCS revision.",
		Examples: []string{Program + " version", Program + " --version", Program + " version --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return printVersion
		},
	}
}

// printVersion prints the version line, or its JSON object with --json.
func printVersion(e *Env, _ []string) error {
	bi := buildinfo.Read() // with Version applied by Run
	if e.Globals.JSON {
		doc := map[string]any{
			"version": bi.Version, "go": bi.GoVersion, "os": runtime.GOOS, "arch": runtime.GOARCH, "stores": driver.Drivers(),
		}
		if bi.Revision != "" {
			doc["revision"], doc["modified"] = bi.Revision, bi.Modified
		}
		if !bi.Time.IsZero() {
			doc["revision_time"] = bi.Time.UTC().Format(time.RFC3339)
		}
		return printJSON(e.Stdout, doc)
	}
	rev := ""
	if bi.Revision != "" && bi.String() != bi.Version {
		rev = ", revision " + bi.String()[len(bi.Version)+1:]
	}
	if !bi.Time.IsZero() && rev != "" {
		rev += " of " + bi.Time.UTC().Format(time.RFC3339)
	}
	_, err := fmt.Fprintf(e.Stdout, "%s %s (%s, %s/%s%s; stores: %v)\n", e.Program(), bi.Version, bi.GoVersion, runtime.GOOS, runtime.GOARCH, rev, driver.Drivers())
	return err
}
