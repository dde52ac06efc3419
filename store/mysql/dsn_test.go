package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/wpconfig"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestParseDSNRejectsMalformedInput: a DSN that does not parse is an
// error, never a silent fallback to defaults (a wrong prefix points a
// worker at another site's tables).
func TestParseDSNRejectsMalformedInput(t *testing.T) {
	for _, dsn := range []string{
		"mysql://root@127.0.0.1:3306/db?prefix=abc_;x",
		"mysql://root@127.0.0.1:3306/db?prefix=%zz",
		"mysql://root@127.0.0.1:3306/db?prefix=a_&prefix=b_",
		"mysql://root@127.0.0.1:3306/db?prefix=abc-",
		"mysql://root@127.0.0.1:3306/db?max_open_conns=0",
		"mysql://root@127.0.0.1:3306/db?wake=maybe",
		"mysql://root@127.0.0.1:3306/",
		"root@tcp(127.0.0.1:3306)/db?prefix=abc_;x",
		"root@tcp(127.0.0.1:3306)/db?prefix=%zz",
		"root@tcp(127.0.0.1:3306)/db?max_open_conns=x",
		"root@tcp(127.0.0.1:3306)/db?timeout=soon",
	} {
		_, err := mysql.ParseDSN(dsn)
		require.Error(t, err, "%s", dsn)
		if err != nil && dsn != "root@tcp(127.0.0.1:3306)/db?timeout=soon" {
			assert.ErrorIs(t, err, driver.ErrInvalidArgument, "%s", dsn)
		}
	}
}

// TestParseDSNKeepsPasswordPunctuation reads the go-sql-driver form the
// way the driver does: the parameters start after the last '/', so a
// password may hold '?' and '/' (wp-config passwords often do).
func TestParseDSNKeepsPasswordPunctuation(t *testing.T) {
	c, err := mysql.ParseDSN("wp:p?a/s&s=1@tcp(db.local:3307)/site?prefix=w1_")
	require.NoError(t, err)
	assert.Equal(t, "wp", c.Driver.User)
	assert.Equal(t, "p?a/s&s=1", c.Driver.Passwd)
	assert.Equal(t, "db.local:3307", c.Driver.Addr)
	assert.Equal(t, "site", c.Driver.DBName)
	assert.Equal(t, "w1_", c.Prefix)

	c, err = mysql.ParseDSN("mysql://u:p%3Fw@127.0.0.1/app?prefix=x_&max_open_conns=8")
	require.NoError(t, err)
	assert.Equal(t, "p?w", c.Driver.Passwd)
	assert.Equal(t, "x_", c.Prefix)
	assert.Equal(t, 8, c.MaxOpenConns)
}

// TestOpenMissingDatabase: a DSN naming a database that does not exist
// fails with a hint, and create=true creates it.
func TestOpenMissingDatabase(t *testing.T) {
	ctx := context.Background()
	name := "queuety_create_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	_, err := queuety.Open(ctx, "mysql://root@127.0.0.1:3306/"+name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist", "hint")
	assert.Contains(t, err.Error(), "create=true", "hint")
	c, err := queuety.Open(ctx, "mysql://root@127.0.0.1:3306/"+name+"?create=true&prefix=t_")
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		db, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/")
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
			db.Close()
		}
	})
	_, err = c.Dispatch(ctx, "h", nil)
	assert.NoError(t, err, "the created database works")
	_, err = mysql.ParseDSN("mysql://root@127.0.0.1:3306/x?create=perhaps")
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "create=perhaps")
}

// TestPasswordPunctuationConnects: a password holding "://", '@', '%',
// '/', '?', '#' and ':' connects in every DSN form: a mysql:// URL with
// the password as written or percent-encoded, a go-sql-driver DSN, and
// the DSN wp-config.php settings give.
func TestPasswordPunctuationConnects(t *testing.T) {
	ctx := context.Background()
	admin := testdb.Admin(t)
	user := fmt.Sprintf("qpw%d", time.Now().UnixNano()%1e9)
	const password = "p://w@x%zz/y?z#:end"
	_, err := admin.ExecContext(ctx, "CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+password+"'") // no quote or backslash to escape
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP USER IF EXISTS '"+user+"'@'%'") })
	_, err = admin.ExecContext(ctx, "GRANT ALL ON test.* TO '"+user+"'@'%'")
	require.NoError(t, err)

	_, prefix := migrated.DSN(t)
	wp := wpconfig.Config{DBName: "test", DBUser: user, DBPassword: password, Host: "127.0.0.1", Port: 3306, TablePrefix: prefix}
	for name, dsn := range map[string]string{
		"url as written": "mysql://" + user + ":" + password + "@127.0.0.1:3306/test?prefix=" + prefix,
		"url encoded":    "mysql://" + url.UserPassword(user, password).String() + "@127.0.0.1:3306/test?prefix=" + prefix,
		"driver form":    user + ":" + password + "@tcp(127.0.0.1:3306)/test?prefix=" + prefix,
		"wp-config":      wp.URL(),
	} {
		c, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, name)
		assert.Equal(t, password, c.Driver.Passwd, name)
		q, err := queuety.Open(ctx, dsn, queuety.SkipMigrate())
		require.NoError(t, err, name)
		_, err = q.Dispatch(ctx, "h", nil)
		assert.NoError(t, err, name)
		q.Close()
	}
}
