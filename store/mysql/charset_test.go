package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// serverCharsets lists the character sets SHOW CHARACTER SET names.
func serverCharsets(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SHOW CHARACTER SET")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		var name string
		vals[0] = &name
		for i := 1; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		require.NoError(t, rows.Scan(vals...))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out)
	return out
}

// clientCharset is what the server makes of a character set as a
// connection character set: whether it can be one at all, and the lead
// bytes after which it reads a backslash or a quote as the second half of
// one character (each of those lets an escaped string be broken out of).
type clientCharset struct {
	name      string
	usable    bool
	swallower []byte
}

// probeCharset asks the server how it parses, under cs, a string literal
// holding a lead byte followed by an escaped quote ('L\”) or a doubled
// quote ('L”'), one query per lead byte, with nothing escaped client-side.
func probeCharset(t *testing.T, db *sql.DB, cs string) clientCharset {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer func() {
		// The admin pool is shared: put the connection back as it was.
		_, err := conn.ExecContext(ctx, "SET NAMES utf8mb4")
		assert.NoError(t, err)
		conn.Close()
	}()
	out := clientCharset{name: cs}
	if _, err := conn.ExecContext(ctx, "SET NAMES "+cs); err != nil {
		var me *gomysql.MySQLError
		require.True(t, errors.As(err, &me) && me.Number == 1231, "SET NAMES %s: %v", cs, err)
		return out // ucs2, utf16, utf16le, utf32: never a client character set
	}
	out.usable = true
	for l := 0x80; l <= 0xff; l++ {
		lead := string([]byte{byte(l)})
		for _, q := range []string{"'" + lead + `\''`, "'" + lead + "'''"} {
			var v []byte
			err := conn.QueryRowContext(ctx, "SELECT "+q).Scan(&v)
			if err != nil || len(v) != 2 {
				out.swallower = append(out.swallower, byte(l))
				break
			}
		}
	}
	return out
}

// hostileQueues returns queue names that break out of an escaped string
// literal when the connection's character set reads lead+'\' as one
// character (the rest of the name then widens the query), and the few of
// them to store and read back.
func hostileQueues(leads []byte) (lookups, stored []string) {
	// A few lead bytes for every charset, and a spread of the lead bytes
	// the server showed to swallow a backslash in this one (the probe has
	// tried them all; the store is tried with a sample, to keep the test
	// short).
	sample := []byte{0x81, 0xa1, 0xbf, 0xe2, 0xfe}
	var swallowers []byte
	for i := 0; i < len(leads); i += max(1, len(leads)/6) {
		swallowers = append(swallowers, leads[i])
	}
	for _, l := range append(sample, swallowers...) {
		for _, tail := range []string{"' OR 1=1 -- ", "' OR 1=1 #", "'' OR 1=1 -- ", `\' OR 1=1 -- `} {
			lookups = append(lookups, string([]byte{l})+tail)
		}
	}
	plain := []string{"€' OR 1=1 -- ", "€' OR 1=1 #", "' OR 1=1 -- ", `\' OR 1=1 #`}
	lookups = append(lookups, plain...)
	// lead+'\' is a valid character wherever lead swallows a backslash.
	stored = plain
	for _, l := range swallowers {
		stored = append(stored, string([]byte{l})+`\' OR 1=1 -- `)
	}
	return lookups, stored
}

// isSyntaxError reports a server parse error (ER_PARSE_ERROR).
func isSyntaxError(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == 1064
}

// TestCharsetsNeverWidenAQuery opens the store with every character set
// the server knows, with client-side interpolation (the default) and
// without it, and then looks up jobs by hostile queue names. Either the
// DSN is refused with an error that names the character set, or no
// lookup returns a job of another queue and a hostile name is stored and
// read back as it was written.
func TestCharsetsNeverWidenAQuery(t *testing.T) {
	ctx := context.Background()
	admin := testdb.Admin(t)
	dsn, _ := migrated.DSN(t)

	seed, err := queuety.Open(ctx, dsn, queuety.SkipMigrate())
	require.NoError(t, err)
	victim, err := seed.Dispatch(ctx, "victim", nil, queuety.OnQueue("victim"))
	require.NoError(t, err)
	seed.Close()

	var refusedUnsafe, acceptedSafe, acceptedPrepared int
	for _, cs := range serverCharsets(t, admin) {
		probe := probeCharset(t, admin, cs)
		for _, mode := range []string{"", "&interpolateParams=false"} {
			t.Run(cs+mode, func(t *testing.T) {
				c, err := queuety.Open(ctx, dsn+"&charset="+cs+mode, queuety.SkipMigrate())
				interpolated := mode == ""
				switch {
				case !probe.usable:
					require.Error(t, err, "the server refuses %s as a client character set", cs)
					assert.Contains(t, err.Error(), cs)
					return
				case interpolated && len(probe.swallower) > 0:
					if assert.Error(t, err, "%s reads %x followed by a backslash as one character: interpolation is injectable", cs, probe.swallower) {
						assert.ErrorIs(t, err, driver.ErrInvalidArgument)
						assert.Contains(t, err.Error(), "charset "+cs)
						assert.Contains(t, err.Error(), "interpolateParams=false", "the error says how to keep the charset")
						refusedUnsafe++
						return
					}
					// Not refused: show what the lookups below make of it.
				default:
					require.NoError(t, err, "%s is safe here (no lead byte swallows a backslash or quote, or interpolation is off)", cs)
					if interpolated {
						acceptedSafe++
					} else {
						acceptedPrepared++
					}
				}
				defer c.Close()
				lookups, stored := hostileQueues(probe.swallower)
				for _, q := range lookups {
					jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: q})
					// The server may refuse a name the character set cannot
					// convert to the column's (Illegal mix of collations), but
					// never with a syntax error: that is a break-out.
					assert.False(t, isSyntaxError(err), "queue %q broke out of its string: %v", q, err)
					for _, j := range jobs {
						assert.NotEqual(t, victim, j.ID, "queue %q widened the query to another queue's job", q)
					}
				}
				// A hostile name the character set can hold is stored and
				// read back verbatim, and finds its own job only.
				verbatim, verbatimMultibyte := 0, 0
				for _, q := range stored {
					id, err := c.Dispatch(ctx, "h", nil, queuety.OnQueue(q))
					if err != nil {
						// The character set cannot hold the bytes and the
						// server refuses them (strict mode).
						assert.False(t, isSyntaxError(err), "queue %q broke out of its string: %v", q, err)
						continue
					}
					j, err := c.Job(ctx, id)
					require.NoError(t, err)
					assert.NotEqual(t, "victim", j.Queue)
					if j.Queue != q {
						continue // a byte without a mapping was stored as '?'
					}
					verbatim++
					if len(probe.swallower) > 0 && strings.ContainsRune(q, '\\') && q[0] >= 0x80 {
						verbatimMultibyte++
					}
					jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: q})
					require.NoError(t, err)
					require.NotEmpty(t, jobs, "queue %q finds its own job", q)
					for _, jj := range jobs {
						assert.NotEqual(t, victim, jj.ID, "queue %q", q)
					}
				}
				assert.NotZero(t, verbatim, "some hostile name round-trips under %s", cs)
				if len(probe.swallower) > 0 {
					assert.NotZero(t, verbatimMultibyte, "a name holding a %s character that ends in a backslash round-trips", cs)
				}
			})
		}
	}
	assert.NotZero(t, refusedUnsafe, "the server knows an unsafe charset (gbk, big5, sjis, cp932): the test must see one refused")
	assert.NotZero(t, acceptedSafe, "utf8mb4 is accepted")
	assert.NotZero(t, acceptedPrepared)
	t.Logf("refused %d unsafe charsets, accepted %d with interpolation and %d without", refusedUnsafe, acceptedSafe, acceptedPrepared)
}

// TestUnsafeCharsetRefusedEverywhere: every way a DSN can pick the
// connection character set (charset, a list of them, collation, the
// character_set_client session variable) is checked, in both DSN forms,
// before any connection is made.
func TestUnsafeCharsetRefusedEverywhere(t *testing.T) {
	for _, dsn := range []string{
		"root@tcp(127.0.0.1:3306)/test?charset=gbk",
		"root@tcp(127.0.0.1:3306)/test?charset=GBK",
		"root@tcp(127.0.0.1:3306)/test?charset=utf8mb4,big5",
		"root@tcp(127.0.0.1:3306)/test?collation=sjis_japanese_ci",
		"root@tcp(127.0.0.1:3306)/test?collation=gbk_chinese_nopad_ci",
		"root@tcp(127.0.0.1:3306)/test?character_set_client=cp932",
		"root@tcp(127.0.0.1:3306)/test?character_set_client=%27gb18030%27",
		"root@tcp(127.0.0.1:3306)/test?charset=nosuchcharset",
		"mysql://root@127.0.0.1:3306/test?charset=gbk",
		"mysql://root@127.0.0.1:3306/test?collation=big5_chinese_ci",
		"mysql://root@127.0.0.1:3306/test?character_set_client=sjis",
	} {
		_, err := mysql.ParseDSN(dsn)
		if assert.Error(t, err, dsn) {
			assert.ErrorIs(t, err, driver.ErrInvalidArgument, dsn)
			assert.Contains(t, err.Error(), "utf8mb4", "%s: the error names the safe choice", dsn)
		}
	}
	for _, dsn := range []string{
		"root@tcp(127.0.0.1:3306)/test",
		"root@tcp(127.0.0.1:3306)/test?charset=utf8mb4",
		"root@tcp(127.0.0.1:3306)/test?charset=utf8",
		"root@tcp(127.0.0.1:3306)/test?charset=latin1&collation=latin1_german2_ci",
		"root@tcp(127.0.0.1:3306)/test?collation=utf8mb4_unicode_ci",
		"root@tcp(127.0.0.1:3306)/test?charset=gbk&interpolateParams=false",
		"mysql://root@127.0.0.1:3306/test?charset=sjis&interpolateParams=false",
	} {
		_, err := mysql.ParseDSN(dsn)
		assert.NoError(t, err, dsn)
	}
}

// TestInterpolateParamsFalseIsHonoured: interpolateParams=false in the DSN
// turns client-side interpolation off; without it, interpolation stays on.
func TestInterpolateParamsFalseIsHonoured(t *testing.T) {
	for dsn, want := range map[string]bool{
		"root@tcp(127.0.0.1:3306)/test":                                true,
		"root@tcp(127.0.0.1:3306)/test?interpolateParams=false":        false,
		"root@tcp(127.0.0.1:3306)/test?interpolateParams=true":         true,
		"mysql://root@127.0.0.1:3306/test":                             true,
		"mysql://root@127.0.0.1:3306/test?interpolateParams=false":     false,
		"mysql://root@127.0.0.1:3306/test?interpolateParams=0&prefix=": false,
	} {
		c, err := mysql.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		assert.Equal(t, want, c.Driver.InterpolateParams, dsn)
	}
}

// TestServerCharsetCheckedAtOpen: the character set the server actually
// gives the session is checked at open, whatever set it (a DSN parameter
// the parser does not read, init_connect, a server that ignores the
// client's choice).
func TestServerCharsetCheckedAtOpen(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	// Set behind the parser's back, as a server-side setting would.
	cfg.Driver.Params = map[string]string{"character_set_client": "'gbk'"}
	_, err = mysql.OpenConfig(ctx, cfg)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "gbk")
}
