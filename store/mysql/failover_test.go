package mysql_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestParseDSNHostList: a DSN may name several servers, in either form;
// the list keeps the DSN's order, gives each address a port, and keeps
// IPv6 addresses in brackets.
func TestParseDSNHostList(t *testing.T) {
	for dsn, want := range map[string][]string{
		"mysql://u:p@10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306/wordpress?prefix=wp_": {"10.0.0.1:3306", "10.0.0.2:3306", "10.0.0.3:3306"},
		"mysql://u:p@db1,db2:3307/wordpress":                                         {"db1:3306", "db2:3307"},
		"mysql://u:p@[::1]:3306,[fe80::1%25eth0],10.0.0.2/wordpress":                 {"[::1]:3306", "[fe80::1%eth0]:3306", "10.0.0.2:3306"},
		"u:p@tcp(10.0.0.1:3306,10.0.0.2:3306)/wordpress?prefix=wp_":                  {"10.0.0.1:3306", "10.0.0.2:3306"},
		"u:p@tcp(db1,db2:3307,[::1]:3308)/wordpress":                                 {"db1:3306", "db2:3307", "[::1]:3308"},
		"u:p,q@tcp(db1,db2)/wordpress":                                               {"db1:3306", "db2:3306"},
	} {
		c, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		assert.Equal(t, want, c.Hosts, dsn)
		assert.Equal(t, want[0], c.Driver.Addr, dsn)
		assert.Equal(t, "wordpress", c.Driver.DBName, dsn)
		assert.Equal(t, "p", strings.Split(c.Driver.Passwd, ",")[0], dsn)
	}
	for _, dsn := range []string{"mysql://u:p@db1:3306/wordpress", "u:p@tcp(db1:3306)/wordpress"} {
		c, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		assert.Empty(t, c.Hosts, "one server: %s", dsn)
		assert.Equal(t, "db1:3306", c.Driver.Addr, dsn)
	}
}

// TestParseDSNRejectsBadHostLists: a host list with an empty entry, a
// bad port, an unbracketed IPv6 address, a repeated address, a socket,
// or a non-tcp network is refused with an error that says which entry
// and never shows the password.
func TestParseDSNRejectsBadHostLists(t *testing.T) {
	const pw = "Sekr3tPw"
	for dsn, want := range map[string]string{
		"mysql://u:" + pw + "@db1,,db2/wp":                   "host 2 of the DSN's host list is empty",
		"mysql://u:" + pw + "@db1,/wp":                       "host 2 of the DSN's host list is empty",
		"mysql://u:" + pw + "@db1:3306,db2:99999/wp":         "the DSN's port must be a number from 1 to 65535 (host 2 of the DSN's host list)",
		"mysql://u:" + pw + "@db1,db2:x/wp":                  "the DSN's port must be a number from 1 to 65535 (host 2 of the DSN's host list)",
		"mysql://u:" + pw + "@db1,::1/wp":                    "must be in brackets, as in mysql://user@[::1]:3306/db (host 2 of the DSN's host list)",
		"mysql://u:" + pw + "@db1,[::1/wp":                   "no closing ']'",
		"mysql://u:" + pw + "@db1:3306,db2,db1/wp":           "hosts 1 and 3 of the DSN's host list are the same address",
		"mysql://u:" + pw + "@db1,db2/wp?socket=/tmp/s.sock": "a DSN with a socket names no hosts",
		"u:" + pw + "@tcp(db1,,db2)/wp":                      "host 2 of the DSN's host list is empty",
		"u:" + pw + "@tcp(db1:0,db2)/wp":                     "host 1 of the DSN's host list: the port must be a number",
		"u:" + pw + "@tcp(db1,db2:3306:1)/wp":                "host 2 of the DSN's host list has no valid host name",
		"u:" + pw + "@tcp(db1,db1:3306)/wp":                  "hosts 1 and 2 of the DSN's host list are the same address",
		"u:" + pw + "@unix(/a,/b)/wp":                        "several addresses only for tcp",
	} {
		_, err := mysql.ParseDSN(dsn)
		require.Error(t, err, dsn)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, dsn)
		assert.Contains(t, err.Error(), want, dsn)
		assert.NotContains(t, err.Error(), pw, dsn)
		assert.NotContains(t, err.Error(), "db1", "an error names entries by position: %s", dsn)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestHostListSkipsDeadServer: with two servers named, the first a port
// nothing listens on, the store connects to the second, and every
// connection it opens later goes there too.
func TestHostListSkipsDeadServer(t *testing.T) {
	ctx := context.Background()
	_, prefix := migrated.DSN(t)
	dead := closedPort(t)
	dsn := "mysql://root@" + dead + ",127.0.0.1:3306/test?prefix=" + prefix + "&max_open_conns=4"
	q, err := queuety.Open(ctx, dsn, queuety.SkipMigrate())
	require.NoError(t, err)
	defer q.Close()
	for range 20 {
		_, err = q.Dispatch(ctx, "h", nil)
		require.NoError(t, err)
	}

	// With no server answering, opening fails with an error naming each.
	dead2 := closedPort(t)
	_, err = queuety.Open(ctx, "mysql://root:Sekr3tPw@"+dead+","+dead2+"/test?prefix="+prefix, queuety.SkipMigrate())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no healthy server among 2")
	assert.Contains(t, err.Error(), dead)
	assert.Contains(t, err.Error(), dead2)
	assert.NotContains(t, err.Error(), "Sekr3tPw")
}
