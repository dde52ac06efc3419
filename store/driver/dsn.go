package driver

import (
	"net/url"
	"strings"
)

// SchemeOf returns the store scheme of a DSN: the part before "://" when
// that is a URL scheme (a letter, then letters, digits, '+', '-' or '.'),
// lower-cased, or "mysql" for anything else, such as the go-sql-driver
// DSN "user:pass@tcp(127.0.0.1:3306)/wordpress?prefix=wp_", whose
// password may itself hold "://".
func SchemeOf(dsn string) string {
	if i := strings.Index(dsn, "://"); i > 0 && isScheme(dsn[:i]) {
		return strings.ToLower(dsn[:i])
	}
	return "mysql"
}

// isScheme reports whether s is a URL scheme (RFC 3986, section 3.1).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// minSecret is the shortest password RedactError searches for: a shorter
// one would garble ordinary words of the message.
const minSecret = 4

// redacted replaces a password in an error message.
const redacted = "xxxxx"

// dsnPassword returns the password a DSN holds, found by the DSN's
// structure alone so that it works on a DSN no parser accepts: in a URL
// (scheme://user:password@host/...) it is the text between the first ':'
// after "://" and the last '@'; in a go-sql-driver DSN
// (user:password@tcp(host)/db) the text between the first ':' and the
// last '@' before the last '/'. It returns the text as written and, when
// that holds percent-escapes, decoded.
func dsnPassword(dsn string) []string {
	var userinfo string
	if i := strings.Index(dsn, "://"); i > 0 && isScheme(dsn[:i]) {
		rest := dsn[i+3:]
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			return nil
		}
		userinfo = rest[:at]
	} else {
		head := dsn
		if slash := strings.LastIndexByte(dsn, '/'); slash >= 0 {
			head = dsn[:slash]
		}
		at := strings.LastIndexByte(head, '@')
		if at < 0 {
			return nil
		}
		userinfo = head[:at]
	}
	_, pass, ok := strings.Cut(userinfo, ":")
	if !ok || pass == "" {
		return nil
	}
	out := []string{pass}
	if dec, err := url.PathUnescape(pass); err == nil && dec != pass {
		out = append(out, dec)
	}
	return out
}

// RedactError returns err with every occurrence of dsn's password (see
// dsnPassword; passwords shorter than four bytes are left alone) in its
// message replaced by "xxxxx". The result still wraps err for errors.Is
// and errors.As. It is the last guard on the errors of opening a store:
// the store packages never put a DSN or its password in an error, but the
// drivers under them are not theirs.
func RedactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, p := range dsnPassword(dsn) {
		if len(p) >= minSecret {
			clean = strings.ReplaceAll(clean, p, redacted)
		}
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError is an error whose message had a password taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
