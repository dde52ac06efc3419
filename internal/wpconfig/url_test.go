package wpconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	qmysql "github.com/queuety/queuety-go/store/mysql"
)

// TestURLRoundTrip proves that the values URL writes come back unchanged
// from the MySQL store's own DSN parser, whatever bytes the user name,
// password, database name and socket path hold, and that the DSN always
// names the MySQL store.
func TestURLRoundTrip(t *testing.T) {
	var printable strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		printable.WriteByte(c)
	}
	passwords := []string{
		"", "secret", "p@ss:w/rd", "@:/", "a/b/c@d@e:f", "q?x=1&prefix=evil", "tcp(evil:1)/other",
		"ümlaut €", "50%off", "100%25", "a://b", "//starts", "#frag", printable.String(),
	}
	users := []string{"wp", "us@er", "wp-user.name", "sqlite", "mysql", "a:b", "50%"}
	addrs := []struct{ host, socket string }{
		{host: "db.internal"},
		{host: "::1"},
		{host: "fe80::1%eth0"},
		{socket: "/run/mysqld/mysqld.sock"},
		{socket: "/tmp/odd @?#%&=.sock"},
	}
	names := []string{"wordpress", "wp-site_1", "my/db?x%y", "db name", "a#b"}
	for _, password := range passwords {
		for _, user := range users {
			for _, addr := range addrs {
				for _, name := range names {
					cfg := Config{DBName: name, DBUser: user, DBPassword: password,
						Host: addr.host, Port: 3307, Socket: addr.socket, TablePrefix: "wp_2_"}
					dsn := cfg.URL()
					require.Equal(t, "mysql", driver.SchemeOf(dsn), dsn)
					got, err := qmysql.ParseDSN(dsn)
					require.NoError(t, err, "ParseDSN(%q)", dsn)
					wantNet, wantAddr := "tcp", fmt.Sprintf("[%s]:3307", addr.host)
					if !strings.Contains(addr.host, ":") {
						wantAddr = addr.host + ":3307"
					}
					if addr.socket != "" {
						wantNet, wantAddr = "unix", addr.socket
					}
					assert.Equal(t, user, got.Driver.User, "user from %q", dsn)
					assert.Equal(t, password, got.Driver.Passwd, "password from %q", dsn)
					assert.Equal(t, wantNet, got.Driver.Net, "network from %q", dsn)
					assert.Equal(t, wantAddr, got.Driver.Addr, "address from %q", dsn)
					assert.Equal(t, name, got.Driver.DBName, "database from %q", dsn)
					assert.Equal(t, "wp_2_", got.Prefix, "prefix from %q", dsn)
				}
			}
		}
	}
}

// TestTableConstants: Queuety's table-name constants in wp-config.php reach
// the MySQL store through URL and DSN, so a Go worker started with
// --wp-config names the tables as Queuety PHP on the site does.
func TestTableConstants(t *testing.T) {
	src := []byte(`<?php
define( 'DB_NAME', 'wp' );
define( 'DB_USER', 'wp' );
define( 'DB_HOST', 'db' );
define( 'QUEUETY_TABLE_PREFIX', 'themequeue' );
define( 'QUEUETY_TABLE_JOBS', getenv('JOBS_TABLE') ?: 'site_jobs' );
define( 'QUEUETY_TABLE_WORKFLOW_EVENTS', 'site_events' );
$table_prefix = 'wp2_';
`)
	cfg, err := Options{LookupEnv: func(string) (string, bool) { return "", false }}.Parse(src)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"table_prefix": "themequeue", "table_jobs": "site_jobs", "table_workflow_events": "site_events"}, cfg.Tables)
	for _, dsn := range []string{cfg.URL(), cfg.DSN()} {
		c, err := qmysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		assert.Equal(t, "wp2_", c.Prefix, dsn)
		assert.Equal(t, "themequeue_", c.TablePrefix, dsn)
		assert.Equal(t, map[string]string{"jobs": "site_jobs", "workflow_events": "site_events"}, c.Tables, dsn)
	}
	// A bad name is the store's clear error, not a silent default.
	cfg.Tables["table_jobs"] = "site-jobs"
	_, err = qmysql.ParseDSN(cfg.URL())
	assert.ErrorContains(t, err, `table name "site-jobs" for jobs`)
}
