package driver

import (
	"fmt"
	"regexp"
)

// DefaultPrefix is the table prefix used when a DSN names none: WordPress's
// default, so Go workers find a stock site's Queuety tables.
const DefaultPrefix = "wp_"

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_]{0,32}$`)

// ValidatePrefix checks a table prefix: at most 32 ASCII letters, digits
// and underscores, so it can be pasted into SQL unquoted. It returns an
// error wrapping ErrInvalidArgument otherwise.
func ValidatePrefix(p string) error {
	if !prefixRE.MatchString(p) {
		return fmt.Errorf("%w: table prefix %q must match ^[A-Za-z0-9_]{0,32}$", ErrInvalidArgument, p)
	}
	return nil
}
