package sqlstore

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/queuety/queuety-go/store/driver"
)

// QueuetyTables are the base names of Queuety's sixteen tables, as Queuety
// PHP's Config::table_* methods name them: the table is
// <prefix><table prefix><base> unless QUEUETY_TABLE_<BASE> names it.
var QueuetyTables = []string{
	"jobs", "workflows", "logs", "schedules", "queue_states", "webhooks", "signals",
	"workflow_dependencies", "workflow_dispatch_keys", "locks", "batches", "chunks",
	"workflow_events", "artifacts", "state_machines", "state_machine_events",
}

// DefaultTablePrefix is Queuety's table prefix when QUEUETY_TABLE_PREFIX
// is not defined.
const DefaultTablePrefix = "queuety_"

// MaxTableName is the longest table name MySQL accepts.
const MaxTableName = 64

// Names says how a store names its tables, as Queuety PHP does: every
// name starts with Prefix (WordPress's $table_prefix, "wp_"); then comes
// either the table's own name (QUEUETY_TABLE_JOBS, ...) or TablePrefix
// (QUEUETY_TABLE_PREFIX, "queuety_" by default) and the base name. The Go
// engine's own tables are <Prefix><TablePrefix>go_<name>.
type Names struct {
	Prefix      string
	TablePrefix string
	// Override maps a base name of QueuetyTables to the table's name
	// after Prefix.
	Override map[string]string
}

// DefaultNames are the names Queuety uses for a prefix when nothing is
// overridden.
func DefaultNames(prefix string) Names { return Names{Prefix: prefix, TablePrefix: DefaultTablePrefix} }

// Table returns the name of Queuety's table base.
func (n Names) Table(base string) string {
	if o, ok := n.Override[base]; ok {
		return n.Prefix + o
	}
	return n.Prefix + n.TablePrefix + base
}

// GoTable returns the name of the Go engine's table name ("failures").
func (n Names) GoTable(name string) string { return n.Prefix + n.TablePrefix + "go_" + name }

// IsDefault reports whether n names the tables as DefaultNames(n.Prefix).
func (n Names) IsDefault() bool { return n.TablePrefix == DefaultTablePrefix && len(n.Override) == 0 }

// NormalizeTablePrefix normalizes a table prefix as Queuety PHP does: white
// space trimmed, and an underscore at the end unless it is empty.
func NormalizeTablePrefix(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	return strings.TrimRight(p, "_") + "_"
}

var (
	tablePrefixRE = regexp.MustCompile(`^[A-Za-z0-9_]{0,32}$`)
	tableNameRE   = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// goTables are the Go engine's own tables, by the name GoTable takes.
var goTables = []string{"failures", "migrations", "batch_events", "limits", "rate_starts", "webhook_secrets", "workflow_ends", "held_claims"}

// Validate checks that every name is one MySQL and SQLite accept unquoted
// (ASCII letters, digits and underscores, at most 64 characters with the
// prefix), that overrides name known tables, and that no two tables share
// a name. Its errors wrap driver.ErrInvalidArgument and name the setting.
func (n Names) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{driver.ErrInvalidArgument}, args...)...)
	}
	if !tablePrefixRE.MatchString(n.TablePrefix) {
		return bad("table prefix %q (table_prefix, QUEUETY_TABLE_PREFIX) must match ^[A-Za-z0-9_]{0,32}$", n.TablePrefix)
	}
	for base, name := range n.Override {
		if !isQueuetyTable(base) {
			return bad("unknown Queuety table %q (known: %s)", base, strings.Join(QueuetyTables, ", "))
		}
		if !tableNameRE.MatchString(name) {
			return bad("table name %q for %s (table_%s, %s) must be ASCII letters, digits and underscores", name, base, base, EnvTable(base))
		}
	}
	seen := map[string]string{}
	check := func(what, name string) error {
		if len(name) > MaxTableName {
			return bad("table name %q for %s is %d characters with the prefix; MySQL allows %d", name, what, len(name), MaxTableName)
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return bad("tables %s and %s would both be named %q", other, what, name)
		}
		seen[strings.ToLower(name)] = what
		return nil
	}
	for _, base := range QueuetyTables {
		if err := check(base, n.Table(base)); err != nil {
			return err
		}
	}
	for _, g := range goTables {
		if err := check("go_"+g, n.GoTable(g)); err != nil {
			return err
		}
	}
	return nil
}

// EnvTable is the environment variable (and Queuety PHP constant) naming
// the table base: QUEUETY_TABLE_JOBS for "jobs".
func EnvTable(base string) string { return "QUEUETY_TABLE_" + strings.ToUpper(base) }

// EnvTablePrefix is the environment variable (and Queuety PHP constant)
// holding the table prefix.
const EnvTablePrefix = "QUEUETY_TABLE_PREFIX"

func isQueuetyTable(base string) bool {
	for _, b := range QueuetyTables {
		if b == base {
			return true
		}
	}
	return false
}

// TableSettings reads the table-name settings: DSN parameters (removed
// from q) first, then the environment (getenv, a lookup such as
// os.LookupEnv), then Queuety's defaults. A parameter table_prefix or
// table_<base>, or a variable QUEUETY_TABLE_PREFIX or QUEUETY_TABLE_<BASE>,
// set to a value, sets it even when empty (an empty table prefix means
// none, as in PHP; an empty table name is an error). A parameter table_*
// that names no Queuety table is an error; unknown variables are ignored.
func TableSettings(prefix string, q map[string][]string, getenv func(string) (string, bool)) (Names, error) {
	n := DefaultNames(prefix)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{driver.ErrInvalidArgument}, args...)...)
	}
	take := func(param, env string) (string, bool, error) {
		if vs, ok := q[param]; ok {
			if len(vs) > 1 {
				return "", false, bad("DSN parameter %s is given %d times", param, len(vs))
			}
			delete(q, param)
			return vs[0], true, nil
		}
		if getenv != nil {
			if v, ok := getenv(env); ok {
				return v, true, nil
			}
		}
		return "", false, nil
	}
	var unknown []string
	for k := range q {
		if rest, ok := strings.CutPrefix(k, "table_"); ok && rest != "prefix" && !isQueuetyTable(rest) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return n, bad("unknown DSN parameter %s (table_prefix or table_<name>, the name one of %s)", unknown[0], strings.Join(QueuetyTables, ", "))
	}
	if v, ok, err := take("table_prefix", EnvTablePrefix); err != nil {
		return n, err
	} else if ok {
		n.TablePrefix = NormalizeTablePrefix(v)
	}
	for _, base := range QueuetyTables {
		v, ok, err := take("table_"+base, EnvTable(base))
		if err != nil {
			return n, err
		}
		if !ok {
			continue
		}
		if strings.TrimSpace(v) == "" {
			return n, bad("table name for %s (table_%s, %s) is empty", base, base, EnvTable(base))
		}
		if n.Override == nil {
			n.Override = map[string]string{}
		}
		n.Override[base] = v
	}
	return n, n.Validate()
}
