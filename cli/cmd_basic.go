package cli

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// Version is the queuety-worker version. Release builds set it with
// -ldflags "-X github.com/queuety/queuety-go/cli.Version=v1.2.3"; otherwise
// the module version from the build information is shown.
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

// versionString returns the version and where it came from.
func versionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func versionCommand() *Command {
	return &Command{
		Name:     "version",
		Summary:  "print the version",
		Examples: []string{Program + " version", Program + " version --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, _ []string) error {
				v := versionString()
				return printResult(e, map[string]any{
					"version": v, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH, "stores": driver.Drivers(),
				}, "%s %s (%s, %s/%s; stores: %v)\n", Program, v, runtime.Version(), runtime.GOOS, runtime.GOARCH, driver.Drivers())
			}
		},
	}
}
