package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	storedriver "github.com/queuety/queuety-go/store/driver"
)

// safeCharsets are the connection character sets under which the server
// never reads a backslash (0x5c) or a quote (0x27) as the second byte of a
// multibyte character. Only under these can query parameters be escaped on
// the client (go-sql-driver's interpolateParams): under big5, cp932, gbk,
// gb18030 or sjis a byte such as 0xbf turns the backslash the driver puts
// before a quote into half of one character, the quote then ends the
// string, and the rest of the value becomes SQL. ucs2, utf16, utf16le and
// utf32 cannot be connection character sets at all. The list is a
// whitelist so that a character set the store does not know is refused,
// not trusted; the tests check it against the server, byte by byte.
var safeCharsets = map[string]bool{
	// Unicode. utf8 is utf8mb3 (or utf8mb4, under MySQL's and MariaDB's
	// newer defaults).
	"utf8mb4": true, "utf8mb3": true, "utf8": true,
	// Single-byte character sets: every byte is one character.
	"armscii8": true, "ascii": true, "binary": true, "cp1250": true, "cp1251": true,
	"cp1256": true, "cp1257": true, "cp850": true, "cp852": true, "cp866": true,
	"dec8": true, "geostd8": true, "greek": true, "hebrew": true, "hp8": true,
	"keybcs2": true, "koi8r": true, "koi8u": true, "latin1": true, "latin2": true,
	"latin5": true, "latin7": true, "macce": true, "macroman": true, "swe7": true,
	"tis620": true,
	// EUC encodings: every byte of a multibyte character is 0x80 or above.
	"eucjpms": true, "euckr": true, "gb2312": true, "ujis": true,
}

// charsetAdvice ends every refusal: what to do instead.
const charsetAdvice = "use charset=utf8mb4 (what Queuety PHP uses), or add interpolateParams=false so that the server binds query parameters itself"

// interpolates reports whether the store escapes query parameters on the
// client for a DSN's parameters: yes unless interpolateParams says false.
// Interpolation saves the round trips of a server-side prepared statement
// on every query outside the store's prepared hot path.
func interpolates(q url.Values) (bool, error) {
	if !q.Has("interpolateParams") {
		return true, nil
	}
	v, err := strconv.ParseBool(q.Get("interpolateParams"))
	if err != nil {
		return false, fmt.Errorf("%w: interpolateParams must be true or false, got %q", storedriver.ErrInvalidArgument, q.Get("interpolateParams"))
	}
	return v, nil
}

// checkCharsetParams refuses DSN parameters that make the connection use a
// character set outside safeCharsets while parameters are interpolated:
// charset (a list the driver tries in order), collation (whose name starts
// with its character set's) and the character_set_client session
// variable. It gives an early, precise error for the usual ways; a session
// variable's value is SQL the driver sends as it is and can set anything,
// so every connection is also checked once it is made (checkedConnector).
func checkCharsetParams(q url.Values, interpolate bool) error {
	if !interpolate {
		return nil
	}
	for key, vs := range q {
		for _, v := range vs {
			switch name := sessionVariable(key); name {
			case "charset":
				for _, cs := range strings.Split(v, ",") {
					if err := checkCharset(strings.TrimSpace(cs), "charset "+strings.TrimSpace(cs)); err != nil {
						return err
					}
				}
			case "collation":
				cs, _, _ := strings.Cut(v, "_")
				if err := checkCharset(cs, fmt.Sprintf("collation %s (charset %s)", v, cs)); err != nil {
					return err
				}
			case "character_set_client":
				cs := strings.Trim(v, `'"`+"`")
				if err := checkCharset(cs, "character_set_client "+cs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sessionVariable normalises a DSN parameter name the way the server reads
// a variable name: case-insensitive, with an optional @@, session. or
// local. in front.
func sessionVariable(key string) string {
	k := strings.ToLower(strings.TrimSpace(key))
	k = strings.TrimPrefix(k, "@@")
	k = strings.TrimPrefix(k, "session.")
	k = strings.TrimPrefix(k, "local.")
	return k
}

// checkCharset refuses a character set outside safeCharsets; what names
// the setting in the error.
func checkCharset(cs, what string) error {
	if safeCharsets[strings.ToLower(cs)] {
		return nil
	}
	return fmt.Errorf("%w: DSN asks for %s, under which escaping query parameters on the client is not known to be safe (a multibyte character could take in the backslash before a quote and let a value end its string); %s",
		storedriver.ErrInvalidArgument, what, charsetAdvice)
}

// checkedConnector makes connections whose parameters are interpolated on
// the client and refuses each one the server gives a character set
// outside safeCharsets, whatever set it: a DSN parameter, init_connect, a
// server that ignores the character set the client asks for.
type checkedConnector struct {
	driver.Connector
}

// Connect implements driver.Connector.
func (c checkedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := clientCharset(ctx, conn)
	if err == nil {
		err = checkCharset(cs, "a connection the server gave character_set_client "+cs)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// clientCharset reads the character set the server parses the
// connection's queries in.
func clientCharset(ctx context.Context, conn driver.Conn) (string, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return "", errors.New("check the connection character set: the driver cannot run a query on a raw connection")
	}
	rows, err := q.QueryContext(ctx, "SELECT @@character_set_client", nil)
	if err != nil {
		return "", fmt.Errorf("check the connection character set: %w", err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		if err == io.EOF {
			err = errors.New("no row")
		}
		return "", fmt.Errorf("check the connection character set: %w", err)
	}
	switch s := v[0].(type) {
	case []byte:
		return string(s), nil
	case string:
		return s, nil
	}
	return "", fmt.Errorf("check the connection character set: unexpected %T", v[0])
}
