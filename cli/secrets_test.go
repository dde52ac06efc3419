package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
)

// The two halves of every password below. A password that leaks in part
// (cut at "://", at '@', at a bad escape) still shows one of them.
const (
	secretFront = "Front7sekrit"
	secretBack  = "Back9sekrit"
)

// secretCase is a way to name a store with a known password that fails
// somewhere between reading the setting and running a query.
type secretCase struct {
	name string
	// dsn is passed with --dsn (and, once, through QUEUETY_DSN).
	dsn string
	// wpConfig, when set, is a wp-config.php passed with --wp-config.
	wpConfig string
}

// secretCases lists every DSN form with a password, each failing in its
// own way: a DSN no URL parser accepts, a password holding "://", '@',
// '%', '/' or '?', a server that refuses the connection, a wrong
// password, bad parameters, create=true failing, and wp-config.php files
// whose password is set by something the reader cannot evaluate.
func secretCases(t *testing.T) []secretCase {
	plain := secretFront + secretBack
	colon := secretFront + "://" + secretBack
	at := secretFront + "@" + secretBack
	percent := secretFront + "%zz" + secretBack
	slashQuery := secretFront + "/x?" + secretBack
	missingDB := fmt.Sprintf("queuety_nodb_%d", time.Now().UnixNano()%1e9)
	cases := []secretCase{
		{name: "url percent in password, refused", dsn: "mysql://root:" + percent + "@127.0.0.1:1/test"},
		{name: "url bad port", dsn: "mysql://root:" + plain + "@127.0.0.1:99x/test"},
		{name: "url missing bracket", dsn: "mysql://root:" + plain + "@[::1/test"},
		{name: "url password with ://", dsn: "mysql://root:" + colon + "@127.0.0.1:1/test"},
		{name: "url password with @", dsn: "mysql://root:" + at + "@127.0.0.1:1/test"},
		{name: "url password with / and ?", dsn: "mysql://root:" + slashQuery + "@127.0.0.1:1/test"},
		{name: "url wrong password", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test"},
		{name: "url wrong password with ://", dsn: "mysql://root:" + colon + "@127.0.0.1:3306/test"},
		{name: "url server down", dsn: "mysql://root:" + plain + "@127.0.0.1:1/test"},
		{name: "url bad prefix", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?prefix=bad-"},
		{name: "url bad escape in parameters", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?prefix=%zz"},
		{name: "url bad timeout", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?timeout=soon"},
		{name: "url unsafe charset", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?charset=gbk"},
		{name: "url bad interpolateParams", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?interpolateParams=maybe"},
		{name: "url bad create", dsn: "mysql://root:" + plain + "@127.0.0.1:3306/test?create=perhaps"},
		{name: "url create, server down", dsn: "mysql://root:" + plain + "@127.0.0.1:1/" + missingDB + "?create=true"},
		{name: "url create, wrong password", dsn: "mysql://root:" + colon + "@127.0.0.1:3306/" + missingDB + "?create=true"},
		{name: "url no database", dsn: "mysql://root:" + percent + "@127.0.0.1:3306/"},
		{name: "unknown scheme", dsn: "redis://root:" + plain + "@127.0.0.1/test"},
		{name: "postgres server down", dsn: "postgres://root:" + plain + "@127.0.0.1:1/test"},
		{name: "postgres password with @ and ://, server down", dsn: "postgresql://root:" + colon + at + "@127.0.0.1:1/test"},
		{name: "postgres bad port", dsn: "postgres://root:" + plain + "@127.0.0.1:99x/test"},
		{name: "postgres unknown parameter", dsn: "postgres://root:" + plain + "@127.0.0.1:5432/test?search_path=x"},
		{name: "postgres bad sslmode", dsn: "postgres://root:" + plain + "@127.0.0.1:5432/test?sslmode=sometimes"},
		{name: "postgres missing database", dsn: "postgres://root:" + plain + "@127.0.0.1:5432/" + missingDB},
		{name: "postgres create, server down", dsn: "postgres://root:" + percent + "@127.0.0.1:1/" + missingDB + "?create=true"},
		{name: "driver form password with ://", dsn: "root:" + colon + "@tcp(127.0.0.1:1)/test"},
		{name: "driver form password with @", dsn: "root:" + at + "@tcp(127.0.0.1:1)/test"},
		{name: "driver form password with / and ?", dsn: "root:" + slashQuery + "@tcp(127.0.0.1:1)/test"},
		{name: "driver form missing parenthesis", dsn: "root:" + plain + "@tcp(127.0.0.1:3306/test"},
		{name: "driver form no slash", dsn: "root:" + plain + "@tcp(127.0.0.1:3306)"},
		{name: "driver form slash in password, no database", dsn: "root:" + secretFront + "/" + secretBack + "@tcp(127.0.0.1:3306)"},
		{name: "driver form slash in password, no address", dsn: "root:" + secretFront + "/" + secretBack + "@127.0.0.1%"},
		{name: "driver form bad timeout", dsn: "root:" + plain + "@tcp(127.0.0.1:3306)/test?timeout=soon"},
		{name: "driver form wrong password", dsn: "root:" + plain + "@tcp(127.0.0.1:3306)/test"},
		{name: "sqlite password parameter", dsn: "sqlite://" + filepath.Join(t.TempDir(), "x.db") + "?password=" + plain},
	}
	dir := t.TempDir()
	for i, wp := range []struct{ name, user, password, host string }{
		{"wp-config password with ://, server down", "'root'", "'" + colon + "'", "127.0.0.1:1"},
		{"wp-config password with @ and %, wrong password", "'root'", "'" + at + "%zz'", "127.0.0.1:3306"},
		{"wp-config user mysql, password starting //", "'mysql'", "'//" + at + "'", "127.0.0.1:1"},
		{"wp-config password by an unknown function", "'root'", "my_secret('" + secretFront + "' . '" + secretBack + "')", "127.0.0.1:3306"},
		{"wp-config password interpolating", "'root'", `"` + secretFront + `$x` + secretBack + `"`, "127.0.0.1:3306"},
		{"wp-config password with a stray literal", "'root'", "'" + secretFront + "' '" + secretBack + "'", "127.0.0.1:3306"},
		{"wp-config password from an unknown constant", "'root'", "PW", "127.0.0.1:3306"},
	} {
		src := "<?php\n" +
			"define('PW', vault('" + secretFront + "', '" + secretBack + "'));\n" +
			"define('DB_NAME', 'test');\n" +
			"define('DB_USER', " + wp.user + ");\n" +
			"define('DB_PASSWORD', " + wp.password + ");\n" +
			"define('DB_HOST', '" + wp.host + "');\n"
		path := filepath.Join(dir, fmt.Sprintf("wp-config-%d.php", i))
		require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
		cases = append(cases, secretCase{name: wp.name, wpConfig: path})
	}
	return cases
}

// assertNoSecret fails when out holds either half of the password, in
// any case (a scheme is lower-cased before it is shown).
func assertNoSecret(t *testing.T, out, what string) {
	t.Helper()
	for _, s := range []string{secretFront, secretBack} {
		assert.NotContains(t, strings.ToLower(out), strings.ToLower(s), "%s shows the password:\n%s", what, out)
	}
}

// TestNoPasswordInAnyOutput feeds every DSN form and every failure path
// a known password and searches everything the CLI prints, and every
// error queuety.Open returns, for it.
func TestNoPasswordInAnyOutput(t *testing.T) {
	testdb.Admin(t) // the wrong-password cases need the server
	t.Setenv(cli.EnvDSN, "")
	commands := [][]string{
		{"status"}, {"job", "list"}, {"migrate"}, {"work", "--once"},
		{"--json", "status"}, {"--log-level", "debug", "--log-format", "json", "work", "--once"},
		{"bench", "--jobs", "1", "--workflows", "1", "--runs", "1"},
	}
	for _, c := range secretCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, cmd := range commands {
				if cmd[0] == "bench" && strings.HasPrefix(c.dsn, "sqlite://") {
					continue // the SQLite bench makes its own files and would run
				}
				source := []string{"--dsn", c.dsn}
				if c.wpConfig != "" {
					source = []string{"--wp-config", c.wpConfig}
				}
				args := append(source, cmd...)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				r := runCtx(ctx, t, nil, args...)
				cancel()
				assert.NotEqual(t, 0, r.code, "%v: every case fails", cmd)
				assert.NotEmpty(t, strings.TrimSpace(r.stderr), "%v: the failure is reported", cmd)
				assert.NotContains(t, r.stderr, "panic", "%v", cmd)
				assertNoSecret(t, r.stdout+r.stderr, fmt.Sprintf("%v", cmd))
			}
			if c.dsn == "" {
				return
			}
			_, err := queuety.Open(context.Background(), c.dsn)
			require.Error(t, err)
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
				assertNoSecret(t, fmt.Sprintf(verb, err), "queuety.Open error "+verb)
			}
		})
	}
}

// TestNoPasswordFromEnvironment: the same for a DSN from QUEUETY_DSN.
func TestNoPasswordFromEnvironment(t *testing.T) {
	for _, dsn := range []string{
		"mysql://root:" + secretFront + "%zz" + secretBack + "@127.0.0.1:99x/test",
		"root:" + secretFront + "://" + secretBack + "@tcp(127.0.0.1:1)/test",
	} {
		t.Setenv(cli.EnvDSN, dsn)
		for _, cmd := range [][]string{{"status"}, {"work", "--once"}} {
			r := run(t, nil, cmd...)
			assert.NotEqual(t, 0, r.code)
			assert.NotEmpty(t, strings.TrimSpace(r.stderr))
			assertNoSecret(t, r.stdout+r.stderr, fmt.Sprintf("%v with $%s", cmd, cli.EnvDSN))
		}
	}
}
