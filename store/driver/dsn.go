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

// minSecret is the shortest password RedactError searches for whole: a
// shorter one would garble ordinary words of the message.
const minSecret = 4

// minQuoted is the shortest run of a password's text RedactError takes
// out of a message when the run stands alone.
const minQuoted = 6

// redacted replaces a password in an error message.
const redacted = "xxxxx"

// dsnPassword returns the text of a DSN that may hold its password, found
// by the DSN's structure alone so that it works on a DSN no parser
// accepts: from the first ':' of the user information (after "scheme://"
// in a URL, from the start in a go-sql-driver DSN) to the last '@' of the
// DSN. A password always lies there, however the rest is read: whatever
// precedes the last '@' is user information under some reading, and a
// user name holds no ':'. It returns the text as written and, when that
// holds percent-escapes, decoded.
func dsnPassword(dsn string) []string {
	rest := dsn
	if i := strings.Index(dsn, "://"); i > 0 && isScheme(dsn[:i]) {
		rest = dsn[i+3:]
	}
	at := strings.LastIndexByte(rest, '@')
	colon := strings.IndexByte(rest, ':')
	if at < 0 || colon < 0 || colon > at {
		return nil
	}
	pass := rest[colon+1 : at]
	if pass == "" {
		return nil
	}
	out := []string{pass}
	if dec, err := url.PathUnescape(pass); err == nil && dec != pass {
		out = append(out, dec)
	}
	return out
}

// RedactError returns err with dsn's password taken out of its message
// (see dsnPassword): the whole password when it is four bytes or longer,
// and any run of six bytes or more of it, which is what a message quoting
// part of a DSN read the wrong way shows. What it takes out becomes
// "xxxxx". The result still wraps err for errors.Is and errors.As. It is
// the last guard on the errors of opening a store: the store packages
// never put a DSN or its password in an error, but the drivers under them
// are not theirs.
func RedactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := redact(msg, dsnPassword(dsn))
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redact replaces in msg every occurrence of a secret (four bytes or
// longer) and of every six-byte run of one.
func redact(msg string, secrets []string) string {
	hide := make([]bool, len(msg))
	mark := func(needle string) {
		for off := 0; ; {
			i := strings.Index(msg[off:], needle)
			if i < 0 {
				return
			}
			for j := off + i; j < off+i+len(needle); j++ {
				hide[j] = true
			}
			off += i + 1
		}
	}
	for _, s := range secrets {
		if len(s) >= minSecret {
			mark(s)
		}
		for i := 0; i+minQuoted <= len(s); i++ {
			mark(s[i : i+minQuoted])
		}
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		switch {
		case !hide[i]:
			b.WriteByte(msg[i])
		case i == 0 || !hide[i-1]:
			b.WriteString(redacted)
		}
	}
	return b.String()
}

// redactedError is an error whose message had a password taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
