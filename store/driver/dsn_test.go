package driver_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/store/driver"
)

// TestSchemeOf: only a URL scheme before "://" names a store; a
// go-sql-driver DSN whose password holds "://" is a MySQL DSN, and its
// password never becomes a "scheme" an error would show.
func TestSchemeOf(t *testing.T) {
	for dsn, want := range map[string]string{
		"mysql://root@127.0.0.1/db":            "mysql",
		"MySQL://root@127.0.0.1/db":            "mysql",
		"sqlite://queuety.db":                  "sqlite",
		"my+sql.x-1://h":                       "my+sql.x-1",
		"root:pa://ss@tcp(127.0.0.1:3306)/db":  "mysql",
		"root:p@ss://x@tcp(127.0.0.1:3306)/db": "mysql",
		"root@tcp(127.0.0.1:3306)/db?x=a://b":  "mysql",
		"1abc://h":                             "mysql",
		"://h":                                 "mysql",
		"user name://x@tcp(127.0.0.1:3306)/db": "mysql",
		"root:secret@unix(/tmp/mysql.sock)/db": "mysql",
	} {
		assert.Equal(t, want, driver.SchemeOf(dsn), dsn)
	}
}

// TestRedactError: the password a DSN holds is taken out of an error's
// message wherever it appears, found by the DSN's structure even when
// the DSN does not parse, and the error still matches what it wraps.
func TestRedactError(t *testing.T) {
	base := fmt.Errorf("%w: wrapped", driver.ErrInvalidArgument)
	for dsn, pw := range map[string]string{
		"mysql://root:s3cret%zz@127.0.0.1:99x/db":      "s3cret%zz",
		"mysql://root:a://b@c@[::1/db":                 "a://b@c",
		"mysql://root:p%40ssword@h/db":                 "p@ssword",
		"root:pa://ss/wd?x@tcp(127.0.0.1:3306)/db?a=b": "pa://ss/wd?x",
		"root:hunter22@tcp(127.0.0.1:3306":             "hunter22",
	} {
		err := driver.RedactError(fmt.Errorf("connect as %s (%s): %w", pw, dsn, base), dsn)
		assert.NotContains(t, err.Error(), pw, dsn)
		assert.Contains(t, err.Error(), "xxxxx", dsn)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, dsn)
	}
	// A driver that reads the DSN the wrong way quotes a piece of the
	// password; runs of six bytes or more are taken out too.
	dsn := "root:Front7sekrit/Back9sekrit@127.0.0.1%"
	err := driver.RedactError(errors.New(`invalid dbname "Back9sekrit@127.0.0.1%", network 'root:Front7sekrit'`), dsn)
	assert.Equal(t, `invalid dbname "xxxxx@127.0.0.1%", network 'root:xxxxx'`, err.Error())

	plain := errors.New("connect to 127.0.0.1:3306: refused")
	assert.Same(t, plain, driver.RedactError(plain, "mysql://root:abc@h/db"), "nothing to take out, or a password too short to search for")
	assert.Same(t, plain, driver.RedactError(plain, "mysql://root@h/db"))
	assert.NoError(t, driver.RedactError(nil, "mysql://root:secret@h/db"))
}
